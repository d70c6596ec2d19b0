"""``envkit.gym``'s face: what other packages may use is in its ``__all__``, and smoke, the
trainer and the CLI import the runtime from there only (no module of theirs reaches into
``envkit.gym.<module>``, and none imports a leading-underscore name of another package)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

import envkit.gym

CLIENTS = ("envkit/smoke", "envkit/cli", "trainer", "envkit/output/smoke.py")
OWN = ("envkit/gym", "envkit/smoke", "envkit/policy_server", "envkit/output/smoke.py",
       "envkit/cli/smoke.py", "envkit/cli/rollout.py", "envkit/platform/errors.py",
       "validators/runtime_signatures.py", "validators/spinup.py")
_PACKAGE_OF = {"validators": "envkit.validators", "trainer": "envkit.trainer",
               "converters": "envkit.converters"}


def _files(*roots: str) -> list[Path]:
    out = []
    for root in roots:
        path = REPO_ROOT / root
        out += [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
    return out


def _imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of every ``from X import name`` (name "" for ``import X``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, "") for a in node.names]
    return found


def _package(path: Path) -> str:
    """``envkit.smoke`` for envkit/smoke/run.py, ``envkit.trainer.sources`` for trainer/..."""
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts[:-1])
    top = _PACKAGE_OF.get(parts[0])
    return ".".join([top, *parts[1:]] if top else parts)


@pytest.mark.parametrize("name", envkit.gym.__all__)
def test_every_name_of_the_face_is_there(name: str) -> None:
    assert getattr(envkit.gym, name) is not None


def test_smoke_trainer_and_cli_use_the_face_only() -> None:
    bad = [f"{p.relative_to(REPO_ROOT)}:{line}: {module}"
           for p in _files(*CLIENTS) for line, module, _ in _imports(p)
           if module.startswith("envkit.gym.")]
    assert bad == []


def test_no_leading_underscore_name_of_another_package() -> None:
    bad = []
    for path in _files(*OWN):
        mine = _package(path)
        for line, module, name in _imports(path):
            if not module.startswith("envkit.") or module.startswith(mine + ".") or (
                    module == mine):
                continue
            private = [p for p in [*module.split("."), name] if p.startswith("_")]
            if private:
                bad.append(f"{path.relative_to(REPO_ROOT)}:{line}: {module} {name}")
    assert bad == []
