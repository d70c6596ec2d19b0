"""Run inside the throwaway venv, never imported by envkit: load a verifiers environment and
dump its dataset rows as JSON to a result file.

The environment may print anything, so fd 1 goes to stderr before its code runs and the result
goes to ``--out``, opened before any environment code is imported. An audit hook (PEP 578)
refuses writes outside ``--root``: a guard against careless environments, not a security
boundary against native code.

Usage: python -I _vf_loader.py --module M --env-id ID --args-file F --out FILE --root DIR
       [--num-examples N] [--path DIR ...]
"""

# Standard library only: this file runs with the throwaway venv's interpreter.
from __future__ import annotations

import argparse
import importlib
import json
import os
import socket
import sys
import traceback
import types
from typing import Any

__all__ = ["main"]

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_EVENTS = {
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.truncate": (0,),
    "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,), "shutil.rmtree": (0,),
    "os.rename": (0, 1), "os.symlink": (1,), "os.link": (1,), "shutil.copyfile": (1,),
    "shutil.copytree": (1,), "shutil.move": (1,),
}
_ALLOWED_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def _is_bytecode(path: str) -> bool:
    """importlib's ``__pycache__/`` writes: the venv is cached, so the first load's compile
    serves the next ones."""
    head, tail = os.path.split(path)
    return tail == "__pycache__" or os.path.split(head)[1] == "__pycache__"


class _Guard:
    """Audit hook: refuse and remember writes outside the sandbox root."""

    def __init__(self, root: str, prefix: str) -> None:
        self.root = os.path.realpath(root)
        self.prefix = os.path.realpath(prefix)
        self.violations: list[str] = []

    def _inside(self, path: object) -> bool:
        if isinstance(path, int) or not isinstance(path, str | bytes | os.PathLike):
            return True  # an already-open fd, or no path at all
        real = os.path.realpath(os.fsdecode(path))
        return (real in _ALLOWED_DEVICES or _under(real, self.root)
                or (_under(real, self.prefix) and _is_bytecode(real)))

    def _refuse(self, event: str, path: object) -> None:
        self.violations.append(f"{event} {os.fsdecode(path) if isinstance(path, bytes) else path}")
        msg = f"envkit sandbox: {event} outside the conversion's temp dir refused: {path!r}"
        raise PermissionError(msg)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and len(args) >= 3:
            path, mode, flags = args[0], args[1], args[2]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writes and not self._inside(path):
                self._refuse(event, path)
        elif event in _PATH_EVENTS:
            for i in _PATH_EVENTS[event]:
                if i < len(args) and not self._inside(args[i]):
                    self._refuse(event, args[i])


def _classify_module(module: object) -> str:
    """``classic`` (has ``load_environment``), ``v1`` (exports a verifiers.v1 plugin class)
    or ``none``."""
    if callable(getattr(module, "load_environment", None)):
        return "classic"
    for name in getattr(module, "__all__", None) or ():
        obj = getattr(module, name, None)
        if isinstance(obj, type) and any(
            c.__module__.startswith("verifiers.v1") for c in obj.__mro__[1:]
        ):
            return "v1"
    return "none"


def _v1_origin(obj: object) -> str | None:
    """``module.Class`` of the first verifiers v1 class ``obj`` is an instance of, or None:
    Gym's verifiers_agent calls classic Environment methods on what ``load_environment``
    returns, so a shim returning a v1 ``Env`` (verifiers 0.3.1 ships both stacks) is v1.
    """
    for cls in type(obj).__mro__:
        if (getattr(cls, "__module__", "") or "").startswith("verifiers.v1"):
            return f"{cls.__module__}.{cls.__qualname__}"
    return None


def _dataset(env: Any, num_examples: int) -> tuple[str, Any]:
    """``get_dataset()``, falling back to the eval dataset, as Gym's create_dataset.py does."""
    try:
        return "dataset", env.get_dataset(n=num_examples)
    except ValueError:
        return "eval_dataset", env.get_eval_dataset(n=num_examples)


def _examples(dataset: Any) -> list[dict[str, Any]]:
    to_list = getattr(dataset, "to_list", None)
    return list(to_list()) if callable(to_list) else [dict(row) for row in dataset]


_NET_ERRORS = ("ConnectionError", "ConnectError", "ConnectTimeout", "URLError", "gaierror",
               "MaxRetryError", "NameResolutionError", "LocalEntryNotFoundError",
               "OfflineModeIsEnabled", "APIConnectionError")


class _Net:
    """Audit hook: remember the hosts the load tried to reach (not refused: an env may fetch
    its dataset; the record only explains a failure)."""

    def __init__(self) -> None:
        self.hosts: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        host = None
        if event == "socket.getaddrinfo" and args:
            host = args[0]
        elif event == "socket.connect" and len(args) > 1 and isinstance(args[1], tuple):
            host = args[1][0]
        if isinstance(host, bytes):
            host = host.decode(errors="replace")
        if isinstance(host, str) and host not in ("localhost", "127.0.0.1", "::1", "",
                                                  *self.hosts):
            self.hosts.append(host)


def _dist_of(module: str) -> str:
    """``verifiers 0.3.1`` for ``verifiers.utils.x`` (the installed distribution), or the name."""
    from importlib import metadata

    top = module.split(".")[0]
    try:
        dists = metadata.packages_distributions().get(top) or [top]
        return f"{dists[0]} {metadata.version(dists[0])}"
    except Exception:
        return top


def _where(exc: BaseException, roots: list[str]) -> str:
    """`` (at pkg/mod.py:12)``: the innermost traceback frame in the environment's own files
    (under a ``--path`` root), or ``""``."""
    real = [os.path.realpath(root) for root in roots]
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = os.path.realpath(frame.filename)
        for root in real:
            if _under(path, root):
                return f" (at {os.path.relpath(path, root)}:{frame.lineno})"
    return ""


def _import_failure(exc: ImportError, module: str) -> dict[str, Any]:
    """Which kind of import failure: the env's own module missing, a dependency missing,
    or a name the installed dependency does not have (an API of another version)."""
    missing = getattr(exc, "name", None) or ""
    if isinstance(exc, ModuleNotFoundError):
        if missing.split(".")[0] == module.split(".")[0]:
            return {"kind": "module", "missing": missing,
                    "message": f"cannot import {module!r}: {exc}"}
        return {"kind": "missing", "missing": missing, "message": f"{module!r} imports "
                f"{missing!r}, which no installed distribution provides ({exc})"}
    text = str(exc)
    name = text.split("'")[1] if text.startswith("cannot import name '") else text
    if missing:
        return {"kind": "api", "message": f"{module!r} imports {name!r} from {missing!r}, "
                f"which {_dist_of(missing)} does not have"}
    return {"kind": "missing", "message": f"{module!r}: {text}"}


def _attribute_failure(exc: AttributeError, module: str) -> dict[str, Any] | None:
    """A name of a dependency's module (``vf.SelectConfig``) that the installed release lacks:
    an API of another release. None for anything else: the env's own modules, objects, and a
    module ``__getattr__`` that says something else (verifiers' "install as
    `verifiers[all]`" is a missing extra, and its own words say so)."""
    owner, name = getattr(exc, "obj", None), getattr(exc, "name", None)
    if not isinstance(owner, types.ModuleType) or not isinstance(name, str):
        return None
    if "has no attribute" not in str(exc):
        return None
    if owner.__name__.split(".")[0] == module.split(".")[0]:
        return None  # the environment's own module: its bug, not another release's API
    return {"kind": "api", "message": f"{module!r} uses {name!r} from {owner.__name__!r}, "
            f"which {_dist_of(owner.__name__)} does not have"}


def _failure(exc: BaseException, module: str, net: _Net, roots: list[str]) -> dict[str, Any]:
    found = None
    if isinstance(exc, ImportError):
        found = _import_failure(exc, module)
    elif isinstance(exc, AttributeError):
        found = _attribute_failure(exc, module)
    if found is not None:
        return {"ok": False, **found, "message": found["message"] + _where(exc, roots)}
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    chain = [e for e in (exc, exc.__cause__, exc.__context__) if e is not None]
    if net.hosts and any(type(e).__name__ in _NET_ERRORS
                         or isinstance(e, (ConnectionError, TimeoutError, socket.gaierror))
                         for e in chain):
        return {"ok": False, "kind": "network", "message": f"needs the network at load: "
                f"{', '.join(net.hosts[:3])} ({type(exc).__name__}: {first})"}
    return {"ok": False, "kind": "load", "message": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=20)}


def _load(opts: argparse.Namespace, args: dict[str, Any]) -> dict[str, Any]:
    module = importlib.import_module(opts.module)
    api = _classify_module(module)
    if api != "classic":
        msg = f"module {opts.module!r} has no load_environment"
        return {"ok": False, "kind": api, "message": msg}
    env = module.load_environment(**args)
    origin = _v1_origin(env)
    if origin is not None:
        msg = (f"load_environment returned a {type(env).__name__}, a verifiers v1 class "
               f"({origin}), not a classic verifiers Environment")
        return {"ok": False, "kind": "v1", "message": msg}
    source, dataset = _dataset(env, opts.num_examples)
    verifiers = sys.modules.get("verifiers")
    return {"ok": True, "api": "classic", "source": source,
            "verifiers_version": getattr(verifiers, "__version__", "unknown"),
            "env_class": type(env).__name__, "examples": _examples(dataset)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    for flag in ("--module", "--env-id", "--args-file", "--out", "--root"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--num-examples", type=int, default=-1)
    parser.add_argument("--path", action="append", default=[], help="prepend to sys.path")
    opts = parser.parse_args(argv)
    sys.path[:0] = opts.path
    out_fd = os.open(opts.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.dup2(2, 1)  # the environment's prints go to the log, never into the protocol
    sys.stdout = sys.stderr
    with open(opts.args_file, encoding="utf-8") as fh:  # noqa: PTH123 (stdlib-only, no pathlib)
        args = json.load(fh)
    os.remove(opts.args_file)  # noqa: PTH107 - resolved secrets stay on disk only until here
    guard, net = _Guard(opts.root, sys.prefix), _Net()
    sys.addaudithook(guard)
    sys.addaudithook(net)
    try:
        result = {**_load(opts, args), "hosts": net.hosts}
    except BaseException as exc:
        result = _failure(exc, opts.module, net, opts.path)
    if guard.violations:
        result = {"ok": False, "kind": "escape",
                  "message": "wrote outside its temp dir: " + "; ".join(guard.violations[:5])}
    with os.fdopen(out_fd, "wb") as out:
        out.write(json.dumps(result, default=str, ensure_ascii=False).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
