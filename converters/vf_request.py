"""What ``envkit convert verifiers`` is asked to do, and how it says no."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.errors import FailedError
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.model.target import Target

if TYPE_CHECKING:
    from envkit.validate.report import Report

__all__ = ["GYM_RELEASE_DATE", "GYM_VERIFIERS_VERSION", "VERIFIERS_ONLY_DEPS",
           "VERIFIERS_RELEASE_DATE", "ConvertError", "ConvertRequest"]

GYM_VERIFIERS_VERSION = "0.3.1"
"""What nemo-gym 0.7.0's ``verifiers_agent/requirements.txt`` installs."""
GYM_RELEASE_DATE = "2026-10-13T00:00:00Z"
"""Upper bound for candidate uploads (uv ``--exclude-newer``): nemo-gym 0.7.0's release, so no
dependency newer than the harness can break it (prime-sandboxes 0.5 no longer takes the string
``start_command`` that verifiers 0.3.1 passes)."""
VERIFIERS_RELEASE_DATE = "2026-08-25T00:00:00Z"
"""verifiers 0.3.1's release: what only verifiers brings is bounded by it, so those are the
releases it was built against (Gym's date alone picks a prime-sandboxes that refuses a string
``start_command``)."""
VERIFIERS_ONLY_DEPS = (
    "aiolimiter", "gepa", "httpx", "loguru", "math-verify", "msgpack", "numpy", "openai-agents",
    "prime-pydantic-config", "prime-sandboxes", "prime-tunnel", "pyzmq", "renderers",
    "requests", "setproctitle", "tenacity", "tomli-w", "typing-extensions",
)
"""verifiers 0.3.1's Requires-Dist names that nemo-gym 0.7.0 does not require itself (those it
shares, e.g. aiohttp, need Gym-era releases: nemo-gym 0.7.0 asks for aiohttp>=3.14.4)."""


class ConvertError(FailedError, RuntimeError):
    """The conversion cannot proceed; ``report`` is set when the staged outputs were invalid."""

    def __init__(self, message: str, hint: str = "", report: Report | None = None) -> None:
        super().__init__(message)
        self.hint = hint
        self.report = report


@dataclass(frozen=True, slots=True)
class ConvertRequest:
    hub_id: str
    out_dir: Path
    dataset_dir: Path
    hub_version: str | None = None
    allow_latest: bool = False
    target: Target = field(default_factory=lambda: Target(glibc=(2, 28)))
    index_url: str | None = None
    wheel: Path | None = None
    source: Path | None = None
    verifiers_version: str = GYM_VERIFIERS_VERSION
    gym_version: str = DEFAULT_GYM_VERSION
    env_args: dict[str, Any] = field(default_factory=dict)
    allow_literal_secrets: bool = False
    num_examples: int = -1
    validation_fraction: float = 0.0
    seed: int = 0
    timeout: float = 600.0
    force: bool = False
    host_python: str | None = None
    constraints: tuple[Path, ...] = ()
    """uv ``--constraint`` files: bound versions without adding requirements."""
    overrides: tuple[Path, ...] = ()
    """uv ``--override`` files: replace what any package asks for."""
    wheels_dirs: tuple[Path, ...] = ()
    """Prebuilt wheels offered to the resolver (find-links), preferred over the indexes."""
    exclude_newer: str | None = GYM_RELEASE_DATE
    """Only uploads before this date are candidates (None: no bound)."""
    offline: bool = False
    """Validate the staged package as if the cluster had no egress."""
