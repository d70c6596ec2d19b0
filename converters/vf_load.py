"""Load the environment (its code runs here, in a throwaway venv) and explain a failed load.

The dependencies go into a venv cached by their hashes; the env wheel itself is installed per
run. Each failure the loader classifies becomes one line naming the cause and a hint naming a
real option. ``No module named 'x'`` is often a file of the environment itself that its build
config does not list: then the way out is the build config, not Requires-Dist, and with
``--source`` envkit can see both (:func:`left_out`).
"""

from __future__ import annotations

import logging
import re
import tomllib
import zipfile
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from envkit.converters.env_args import redacted, resolved
from envkit.converters.sandbox import (
    LoadError,
    SandboxError,
    cached_env,
    find_host_python,
    host_platform,
    install_into,
    run_loader,
)
from envkit.converters.vf_closure import fetch, resolve_target
from envkit.converters.vf_request import ConvertError
from envkit.model.target import Target
from envkit.supply import uvcmd
from envkit.supply.cache import cache_root

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from envkit.converters.env_source import EnvWheel
    from envkit.converters.hub import HubRef
    from envkit.converters.sandbox import LoadResult
    from envkit.converters.vf_request import ConvertRequest

__all__ = ["build_settings", "in_wheel", "left_out", "load_error", "load_rows"]

logger = logging.getLogger("envkit.convert")


def _host_closure(req: ConvertRequest, pins: Sequence[Any], wheels: Path, env_wheel: EnvWheel,
                  python: str, work: Path) -> tuple[list[Any], Path]:
    """Pins and a folder of wheels for the interpreter that loads the env: the vendored
    closure itself when the host is the target's platform (the load then also proves
    ``wheels/`` installs), else the same requirements resolved for the host.
    """
    machine, version = host_platform(python)
    if machine == req.target.arch and version == req.target.python:
        return list(pins), wheels
    host = Target(arch=machine, python=version, glibc=(2, 28))
    logger.info("the host (%s) is not the target: resolving the host closure too", host)
    host_pins = resolve_target(replace(req, target=host), env_wheel)
    dest = work / "host-wheels"
    return fetch(host_pins, dest), dest


def load_rows(req: ConvertRequest, hub: HubRef, pins: Sequence[Any], wheels: Path,
              env_wheel: EnvWheel, work: Path) -> LoadResult:
    """Load the env in a subprocess of a venv built from the host closure."""
    python, name = req.host_python or find_host_python(), env_wheel.name
    host_pins, folder = _host_closure(req, pins, wheels, env_wheel, python, work)
    # nemo-gym is the agent's runtime, never imported by a load, and its Requires-Python
    # floor (3.13.14) is above what a local 3.13 may be
    deps = [(p.sha256 or p.filename, folder / p.filename) for p in host_pins
            if p.name not in (name, "nemo-gym")]
    env_file = next(folder / p.filename for p in host_pins if p.name == name)
    logger.info("installing the environment into a throwaway venv (%s)", python)
    uv = uvcmd.uv_bin()
    try:
        venv_python = cached_env(uv, cache_root() / "convert-venvs", python, deps)
        site = install_into(uv, venv_python, env_file, work / "run" / "site")
    except SandboxError as exc:
        raise ConvertError(str(exc), "the host needs the same closure the target gets") from None
    return _run(req, hub, venv_python, work, site, env_wheel)


def _run(req: ConvertRequest, hub: HubRef, venv_python: Path, work: Path, site: Path,
         env_wheel: EnvWheel | None) -> LoadResult:
    logger.info("loading %s with load_environment(**%s)", hub.vf_env_id,
                redacted(req.env_args))
    try:
        loaded = run_loader(venv_python, hub.module, hub.vf_env_id, resolved(req.env_args),
                            work / "run", timeout=req.timeout, num_examples=req.num_examples,
                            path=[site])
    except LoadError as exc:
        if exc.log.strip() and exc.kind in ("load", "crash"):
            logger.error("output of the environment's load:\n%s", exc.log[-3000:])
        raise load_error(exc, req, hub, env_wheel) from None
    if loaded.hosts:
        logger.warning("load_environment reached the network (%s): the agent's load on the "
                       "cluster will need it too", ", ".join(loaded.hosts))
    logger.info("loaded %s (%s, verifiers %s): %d examples", hub.vf_env_id, loaded.env_class,
                loaded.verifiers_version, len(loaded.examples))
    return loaded


def load_error(exc: LoadError, req: ConvertRequest, hub: HubRef,
               env_wheel: EnvWheel | None) -> ConvertError:
    """A failed load as one line naming its cause, with a hint that names a real option."""
    left = _left_out_error(exc, req, hub, env_wheel) or (
        f"loading {hub.vf_env_id!r} failed: {exc}", _known_hint(str(exc)) or _hint(exc, req))
    return ConvertError(*left)


_AT = re.compile(r" \(at [^()]+:\d+\)$")


def _left_out_error(exc: LoadError, req: ConvertRequest, hub: HubRef,
              env_wheel: EnvWheel | None) -> tuple[str, str] | None:
    """``(message, hint)`` when the module the load missed is the environment's own file that
    its build leaves out of the wheel, else None (a dependency)."""
    if exc.kind not in ("missing", "module") or not exc.missing or env_wheel is None:
        return None
    at = _AT.search(str(exc))
    where = at.group(0) if at else ""
    who = (f"module {exc.missing!r}" if exc.missing == hub.module
           else f"{hub.module!r} imports {exc.missing!r}")
    head = f"loading {hub.vf_env_id!r} failed: {who}"
    own = exc.missing.split(".")[0] == hub.module != exc.missing  # a submodule of its own
    if req.source is not None:
        rel = left_out(req.source, env_wheel.path, exc.missing)
        if rel is not None:
            return (f"{head}, which is in the source tree ({rel}) but not in the wheel its "
                    f"build makes ({env_wheel.path.name}){where}",
                    f"the build leaves {rel} out: include it with "
                    f"{build_settings(req.source)}, then convert again")
        if own and not in_wheel(env_wheel.path, exc.missing):
            return (f"{head}, which neither its wheel nor the source tree has{where}",
                    "the environment imports a module of its own package that does not exist: "
                    "fix the import, or add the module to the source tree")
        return None
    if not own or in_wheel(env_wheel.path, exc.missing):
        return None
    return (f"{head}, a module of the environment's own package that its wheel "
            f"({env_wheel.path.name}) does not have{where}",
            "the environment's build leaves it out of the wheel: include it in its build "
            "config (the packages / include list in pyproject.toml) and rebuild, or convert "
            "with --source DIR, which names the file")


_SETTINGS = {
    "setuptools": "[tool.setuptools] packages / py-modules (or [tool.setuptools.packages.find])",
    "hatchling": "[tool.hatch.build.targets.wheel] packages / include",
    "flit_core": "the module flit builds (the project's name, [tool.flit.module] name)",
    "poetry": "[tool.poetry] packages",
    "pdm": "[tool.pdm.build] includes",
    "uv_build": "[tool.uv.build-backend] module-name",
    "maturin": "[tool.maturin] python-packages",
}
"""Where each build backend is told which modules go into the wheel."""


def in_wheel(wheel: Path, dotted: str) -> bool:
    """Does ``wheel`` hold module or package ``dotted`` (a file, a package, a namespace dir)?"""
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False
    path = dotted.replace(".", "/")
    return any(n == f"{path}.py" or n.startswith(f"{path}/")
               or (n.startswith(f"{path}.") and n.endswith((".so", ".pyd"))) for n in names)


def left_out(src: Path, wheel: Path, dotted: str) -> str | None:
    """The source file (``helpers.py``, ``src/env/sub/``) of ``dotted`` when ``src`` has it
    and ``wheel`` does not."""
    if not dotted or in_wheel(wheel, dotted):
        return None
    path = dotted.replace(".", "/")
    for root in ("", "src/"):
        for rel in (f"{path}.py", f"{path}/__init__.py", f"{path}/"):
            found = src / (root + rel)
            if found.is_file() or (rel.endswith("/") and any(found.glob("*.py"))):
                return root + rel
    return None


def build_settings(src: Path) -> str:
    """Where ``src``'s build backend is told what goes into the wheel, for a hint."""
    if not (src / "pyproject.toml").is_file():
        return "packages / py_modules in setup.py"
    try:
        data = tomllib.loads((src / "pyproject.toml").read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    system = data.get("build-system")
    backend = str((system if isinstance(system, dict) else {}).get("build-backend")
                  or "setuptools.build_meta:__legacy__")  # pip's and uv's default
    where = next((w for name, w in _SETTINGS.items() if backend.startswith(name)),
                 f"the include settings of build backend {backend!r}")
    return f"{where} in pyproject.toml"


_KNOWN = (
    (("CreateSandboxRequest", "start_command"),
     "verifiers 0.3.1's SandboxEnv passes start_command as a string, which every "
     "prime-sandboxes release verifiers 0.3.1 admits (>= 0.2.39) refuses: put "
     "'prime-sandboxes==0.2.35' in a file and pass --override FILE"),
)
"""Failures of the harness's own verifiers with its dependencies, and the way out
(prime-sandboxes 0.2.37 refuses a string ``start_command`` unless ``vm=False``, which
verifiers 0.3.1 does not pass)."""


def _known_hint(message: str) -> str | None:
    return next((hint for words, hint in _KNOWN if all(w in message for w in words)), None)


_API_DIST = re.compile(r"which (\S+) \S+ does not have")


def _hint(exc: LoadError, req: ConvertRequest) -> str:
    harness = f"verifiers {req.verifiers_version} (Gym {req.gym_version}'s verifiers_agent)"
    dist = _API_DIST.search(str(exc))
    if exc.kind == "api" and dist and dist.group(1) != "verifiers":
        return (f"the environment was written against another release of {dist.group(1)}: "
                "pin one that has it with --override FILE (e.g. 'name==1.2.3')")
    return {
        "v1": f"{harness} runs the classic API: load_environment(**kwargs) must return a "
              "classic vf.Environment (e.g. vf.SingleTurnEnv), which verifiers_agent drives "
              "with run_group; a v1 Taskset/Env needs a Gym server of your own (package it "
              "as wheels-v1)",
        "none": "the module must define load_environment(**kwargs) (verifiers classic API)",
        "timeout": "raise --timeout if loading legitimately takes longer",
        "escape": "an environment may write only under its HOME/TMPDIR during conversion",
        "module": "the wheel's top-level module must be named after the hub id "
                  "(dashes -> underscores)",
        "api": f"the environment uses an API of another verifiers release: use a release of "
               f"the environment written for {harness}",
        "missing": "the environment does not declare that dependency: add it to its "
                   "Requires-Dist, or add its wheel with --wheels-dir DIR (if it is a file of "
                   "the environment itself, its build leaves it out of the wheel: --source DIR "
                   "checks that)",
        "network": "convert where that host is reachable, or make the environment build its "
                   "dataset without the network (env args, a bundled file)",
        "load": "check --env-args; the traceback is in the log above; a dependency newer "
                "than the harness can be pinned with --override FILE",
    }.get(exc.kind, "see the log above")
