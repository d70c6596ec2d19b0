"""The one log -> EK signature table: where each reading applies, and that the spin-up codes
(EK701-EK705) and EK403 are written out only by their rules and the table (everything else
uses the rule objects, so a grep for a code lands at its rule)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.gym import Where, diagnose
from envkit.platform.errors import ek_code_for
from envkit.validators import RULES
from envkit.validators.runtime_signatures import FALLBACK, SIGNATURES

CODE_DIRS = ("envkit", "validators", "converters", "trainer")
ALLOWED = {"validators/spinup.py", "validators/wheels/rules.py", "validators/runtime_signatures.py"}
LITERAL = re.compile(r"\bEK(?:70[1-5]|403)\b")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (text for people, not code)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.add(id(value))
    return found


def _literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text("utf-8"))
    docs = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs and LITERAL.search(node.value)]


def test_spin_up_codes_and_ek403_are_literals_only_in_their_rules_and_the_table() -> None:
    found = []
    for top in CODE_DIRS:
        for path in sorted((REPO_ROOT / top).rglob("*.py")):
            rel = path.relative_to(REPO_ROOT).as_posix()
            if rel not in ALLOWED:
                found += [f"{rel}:{line}: {text!r}" for line, text in _literals(path)]
    assert found == []


def test_the_scan_sees_a_literal(tmp_path: Path) -> None:
    """The check above can fail: a module that spells a code out is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text('"""Mentions EK403 in a docstring: fine."""\nCODE = "EK403"\nX = f"{1}EK702"\n')
    assert [line for line, _ in _literals(bad)] == [2, 3]


@pytest.mark.parametrize("signature", [*SIGNATURES, *FALLBACK.values()],
                         ids=lambda s: f"{s.code}-{'+'.join(w.name for w in s.where)}")
def test_every_signature_names_a_rule_and_where_it_applies(signature) -> None:
    assert signature.code is None or signature.code in RULES
    assert signature.where
    assert signature.reason or signature.code is not None  # else the rule's title reads it
    re.compile(signature.pattern)


def test_install_chatter_is_read_only_where_it_means_something() -> None:
    """uv's Requires-Python verdict can sit in every server log: an install finding, never a
    rollout's or a bystander server's."""
    note = ("Because the current Python version (3.13.0) does not satisfy Python>=3.13.14 and "
            "vllm-model==0.2.0rc0 depends on Python>=3.13.14, we can conclude that ...")
    assert diagnose(note, Where.INSTALL).code == "EK406"
    assert diagnose(note, Where.SERVER_LOG).code is None
    assert diagnose(note, Where.ROLLOUT).code == "EK704"


# What uv printed in a CI run whose cache had lost an unpacked archive: the override's
# interpreter warning (in every install under --allow-python-override) came first.
_OVERRIDE_WARNING = (
    "(policy_model) warning: The requested interpreter resolved to Python 3.13.0, which is "
    "incompatible with the project's Python requirement: `>=3.13.14` (from "
    "`project.requires-python`)\n")
_DAMAGED_CACHE = (
    "(policy_model) error: Failed to install seed packages into virtual environment\n"
    "(policy_model)   cause: Failed to install: pip-26.3-py3-none-any.whl (pip==26.3)\n"
    "(policy_model)   cause: failed to read directory `/root/.cache/uv/archive-v0/R7BZcgZ6I2hlP"
    "PaY`: No such file or directory (os error 2)\n")


def test_the_overrides_interpreter_warning_names_no_rule() -> None:
    """Under --allow-python-override uv warns on every venv: it is no Requires-Python verdict."""
    assert diagnose(_OVERRIDE_WARNING, Where.INSTALL).code is None
    assert diagnose(_OVERRIDE_WARNING, Where.START).code == "EK705"


@pytest.mark.parametrize(("text", "says"), [
    (_OVERRIDE_WARNING + _DAMAGED_CACHE, "uv's cache is damaged"),
    (_OVERRIDE_WARNING + "error: failed to write to file `/x/y.py`: No space left on device "
     "(os error 28)\n", "the disk is full"),
])
def test_a_host_failure_is_named_as_the_hosts_not_a_package_rule(text: str, says: str) -> None:
    for where in (Where.INSTALL, Where.START):
        found = diagnose(text, where)
        assert found.code is None and found.reason.startswith(says)
        assert found.evidence and "warning" not in found.evidence


def test_an_offline_reading_needs_an_offline_run() -> None:
    text = "socket.gaierror: [Errno -3] Temporary failure in name resolution"
    assert diagnose(text, Where.SERVER_LOG, offline=True).code == "EK703"
    assert diagnose(text, Where.SERVER_LOG, offline=False).code is None


def test_platform_rejections_read_through_the_same_table() -> None:
    submit = [s for s in SIGNATURES if Where.SUBMIT in s.where]
    assert submit and all(s.where == {Where.SUBMIT} for s in submit)
    detail = "Dataset FileSet must contain training.jsonl"
    assert ek_code_for(detail) == "EK500"
    assert diagnose(detail, Where.START).code == "EK705"  # a runtime reader never sees it
    assert ek_code_for("ModuleNotFoundError: No module named 'x'") is None
