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
"""What nemo-gym 0.7.0's ``responses_api_agents/verifiers_agent/requirements.txt`` installs
(``verifiers @ git+...@v0.3.1``); ``tests/converters/test_verifiers.py`` checks it against the
installed Gym when one is present."""
GYM_RELEASE_DATE = "2026-10-13T00:00:00Z"
"""Upper bound for candidate uploads (uv ``--exclude-newer``): the closure is chosen from what
existed when the harness (nemo-gym 0.7.0, uploaded 2026-10-12, running verifiers 0.3.1) was
released, so no dependency newer than the harness can break it (prime-sandboxes 0.5, from
2026-10-20, no longer takes the string ``start_command`` that verifiers 0.3.1 passes)."""


VERIFIERS_RELEASE_DATE = "2026-08-25T00:00:00Z"
"""verifiers 0.3.1 was uploaded 2026-08-24: the dependencies only verifiers brings are bounded
by its own release, not Gym's, so they are the releases verifiers 0.3.1 was built against
(Gym's date alone picks prime-sandboxes 0.4, whose ``start_command`` no longer takes a string
at all; the bound picks 0.2.39)."""
VERIFIERS_ONLY_DEPS = (
    "aiolimiter", "gepa", "httpx", "loguru", "math-verify", "msgpack", "numpy", "openai-agents",
    "prime-pydantic-config", "prime-sandboxes", "prime-tunnel", "pyzmq", "renderers",
    "requests", "setproctitle", "tenacity", "tomli-w", "typing-extensions",
)
"""verifiers 0.3.1's Requires-Dist names that nemo-gym 0.7.0 does not require itself (those it
shares, e.g. aiohttp, need Gym-era releases: nemo-gym 0.7.0 asks for aiohttp>=3.14.4)."""


class ConvertError(FailedError, RuntimeError):
    """The conversion cannot proceed; ``hint`` says what to do about it."""

    def __init__(self, message: str, hint: str = "", report: Report | None = None) -> None:
        super().__init__(message)
        self.hint = hint
        self.report = report
        """The validation report when the staged outputs were found invalid."""


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
