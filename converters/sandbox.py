"""Run environment code where it cannot hurt envkit: a throwaway venv, a subprocess, a timeout.

The loader (``_vf_loader.py``) runs with ``python -I`` in a fresh session, HOME/cwd/TMPDIR
inside a temp dir, and reports through a result file; on a timeout its process group is killed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.errors import FailedError
from envkit.supply.uvcmd import clean_env

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "LoadError",
    "LoadResult",
    "SandboxError",
    "cached_env",
    "find_host_python",
    "host_platform",
    "install_into",
    "loader_env",
    "run_loader",
    "uv_env",
]

_LOADER = Path(__file__).with_name("_vf_loader.py")
_KEEP = ("PATH", "LANG", "LC_ALL", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY",
         "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
_LOG_TAIL = 4000
_PIP_INSTALL = ("pip", "install", "--no-config", "--quiet", "--no-index", "--no-deps")
"""Exactly the wheels given: the closure was resolved already, nothing else may sneak in."""


class SandboxError(FailedError, RuntimeError):
    """The throwaway venv could not be built."""


class LoadError(RuntimeError):
    """Loading the environment failed; ``kind`` says how, ``log`` holds the tail of what it
    printed and ``missing`` the module an import did not find."""

    def __init__(self, kind: str, message: str, log: str = "", missing: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.log = log
        self.missing = missing


@dataclass(frozen=True, slots=True)
class LoadResult:
    examples: list[dict[str, Any]]
    source: str
    verifiers_version: str
    env_class: str
    hosts: tuple[str, ...] = ()
    """Hosts the load looked up or connected to (loopback aside)."""


def uv_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``envkit.supply.uvcmd.clean_env``, keeping ``UV_CACHE_DIR``: where downloads are kept
    is no index configuration."""
    env = clean_env(base)
    cache_dir = (os.environ if base is None else base).get("UV_CACHE_DIR")
    if cache_dir:
        env["UV_CACHE_DIR"] = cache_dir
    return env


def loader_env(root: Path) -> dict[str, str]:
    """HOME, cwd, TMPDIR and every cache inside ``root``; nothing inherited but PATH/locale/TLS."""
    env = {k: v for k, v in os.environ.items() if k in _KEEP}
    env.setdefault("PATH", os.defpath)
    home = root / "home"
    for sub in ("home", "tmp", "cache"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    env.update({
        "HOME": str(home), "TMPDIR": str(root / "tmp"), "XDG_CACHE_HOME": str(root / "cache"),
        "HF_HOME": str(root / "cache" / "huggingface"),
        "PYTHONIOENCODING": "utf-8", "VF_LOG_LEVEL": "WARNING",
    })
    return env


def find_host_python(environ: Mapping[str, str] | None = None) -> str:
    """A CPython 3.13 (the training image's minor) for the throwaway venv, else this one:
    ``$ENVKIT_HOST_PYTHON``, then pyenv's 3.13 builds, then ``python3.13`` on PATH."""
    env = os.environ if environ is None else environ
    candidates = [env.get("ENVKIT_HOST_PYTHON", "")]
    pyenv_root = Path(env.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates += sorted((str(p) for p in pyenv_root.glob("versions/3.13*/bin/python3.13")),
                         reverse=True)
    candidates += [str(p) for d in env.get("PATH", "").split(os.pathsep)
                   if (p := Path(d) / "python3.13").is_file() and "shims" not in d]
    for candidate in filter(None, candidates):
        if _runs(candidate):
            return candidate
    return sys.executable


def _runs(python: str) -> bool:
    try:
        proc = subprocess.run([python, "-c", "import sys; assert sys.version_info >= (3, 11)"],
                              capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def install_into(uv: str, python: Path, wheel: Path, dest: Path) -> Path:
    """Install one wheel into a plain directory (``--target``) that the loader puts on
    ``sys.path``: the environment itself stays out of the shared, cached venv."""
    _uv(uv, [*_PIP_INSTALL, "--python", str(python), "--target", str(dest.resolve()),
             str(wheel.resolve())])
    return dest


def cached_env(uv: str, cache_dir: Path, python: str, wheels: Sequence[tuple[str, Path]]) -> Path:
    """A venv holding exactly ``wheels``, built (in a temp dir, renamed into place) once per
    set of ``(sha256, file)`` and kept in ``cache_dir``.

    :raises SandboxError: uv failed (its message included).
    """
    key = json.dumps([python, sorted(sha for sha, _ in wheels)])
    final = cache_dir / hashlib.sha256(key.encode()).hexdigest()[:32]
    if (final / ".envkit-complete").is_file():
        return final / "bin" / "python"
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=cache_dir))
    try:
        venv = (tmp / "venv").resolve()
        _uv(uv, ["venv", "--no-config", "--quiet", "--python", python, str(venv)])
        _uv(uv, [*_PIP_INSTALL, "--python", str(venv / "bin" / "python"),
                 *(str(Path(w).resolve()) for _, w in wheels)])
        (venv / ".envkit-complete").write_text(key, "utf-8")
        with contextlib.suppress(OSError):  # a concurrent build won: use that one
            venv.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final / "bin" / "python"


def host_platform(python: str) -> tuple[str, tuple[int, int]]:
    """``(machine, (major, minor))`` of the interpreter that will load the environment."""
    code = "import platform, sys; print(platform.machine(), *sys.version_info[:2])"
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60,
                          check=True)
    machine, major, minor = proc.stdout.split()
    return machine, (int(major), int(minor))


def _uv(uv: str, args: list[str]) -> None:
    proc = subprocess.run([uv, *args], env=uv_env(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        reason = " ".join(proc.stderr.split())[-_LOG_TAIL:]
        msg = f"uv {args[0]} {args[1] if len(args) > 1 else ''} failed: {reason}"
        raise SandboxError(msg)


def run_loader(
    python: Path,
    module: str,
    env_id: str,
    env_args: Mapping[str, Any],
    root: Path,
    *,
    timeout: float,
    num_examples: int = -1,
    path: Sequence[Path] = (),
) -> LoadResult:
    """Load the environment in a subprocess of ``python`` and return its dataset examples.

    :raises LoadError: it raised, hung past ``timeout``, wrote outside ``root``, is v1-only,
        or died without a result.
    """
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    env = loader_env(root)
    out, log_path = root / "result.json", root / "loader.log"
    # absolute, not resolved: the venv's python is a symlink that must stay inside the venv
    args_file = root / "args.json"  # not argv: resolved ${oc.env:...} values are secrets
    fd = os.open(args_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(dict(env_args), fh)
    cmd = [str(Path.cwd() / python), "-I", str(_LOADER), "--module", module,
           "--env-id", env_id,
           "--args-file", str(args_file), "--out", str(out), "--root", str(root),
           "--num-examples", str(num_examples)]
    cmd += [arg for p in path for arg in ("--path", str(Path(p).resolve()))]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=root / "home", env=env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            msg = f"load_environment() did not finish within {timeout:g} s (killed)"
            raise LoadError("timeout", msg, _tail(log_path)) from None
        finally:  # kill what the environment left running in its session (children)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
    return _result(out, log_path, proc.returncode)


def _tail(path: Path) -> str:
    try:
        return path.read_bytes()[-_LOG_TAIL:].decode("utf-8", errors="replace")
    except OSError:
        return ""


def _result(out: Path, log_path: Path, returncode: int | None) -> LoadResult:
    log = _tail(log_path)
    try:
        data = json.loads(out.read_text("utf-8"))
    except (OSError, ValueError):
        msg = f"the loader exited with status {returncode} without a result"
        raise LoadError("crash", msg, log) from None
    if not data.get("ok"):
        output = "\n".join(filter(None, [log, data.get("traceback")]))
        raise LoadError(data.get("kind", "load"), data.get("message", "unknown error"), output,
                        data.get("missing") or "")
    return LoadResult(data["examples"], data["source"], data["verifiers_version"],
                      data["env_class"], tuple(data.get("hosts") or ()))
