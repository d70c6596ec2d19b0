"""Optional extras: name the install line instead of failing on an import deep inside.

``envkit rollout`` and ``envkit train`` need the ``train`` extra (torch, transformers, Ray ...);
``envkit submit``, ``envkit job`` and ``--upload`` need the ``platform`` extra (httpx).
Without it they check their inputs first (cheap, and what the user is about to fix anyway),
then stop with the ``pip install`` line that fixes the environment: exit 2.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from envkit.errors import InvalidError, MissingExtraError

__all__ = ["DIST_NAME", "EXTRAS", "InvalidInputs", "MissingExtra", "missing_modules",
           "precheck", "require_extra"]

DIST_NAME = "nemo-envkit"
"""The distribution on PyPI (the command and the import are ``envkit``)."""

EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers", "openai", "psutil", "ray"),
    "platform": ("httpx",),
}
"""Extra -> the modules whose absence means the extra is not installed."""


class MissingExtra(MissingExtraError, RuntimeError):
    """A command needs an optional extra that is not installed (exit 2)."""

    def __init__(self, command: str, extra: str, missing: tuple[str, ...]) -> None:
        super().__init__(f"`envkit {command}` needs the `{extra}` extra "
                         f"(missing: {', '.join(missing)})")
        self.hint = f"pip install '{DIST_NAME}[{extra}]'"


class InvalidInputs(InvalidError, ValueError):
    """A command's inputs fail validation before anything heavy is loaded (exit 1)."""

    def __init__(self, message: str, diagnostics: list) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


def missing_modules(extra: str) -> tuple[str, ...]:
    """The extra's modules that cannot be found (``find_spec`` imports nothing heavy)."""
    return tuple(m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None)


def require_extra(command: str, extra: str) -> None:
    """:raises MissingExtra: when any of the extra's modules is absent."""
    missing = missing_modules(extra)
    if missing:
        raise MissingExtra(command, extra, missing)


def precheck(command: str, extra: str, *, package: Path | None = None,
             dataset: Path | None = None, job: Path | None = None) -> None:
    """Without ``extra``: validate the inputs, then name the install line.

    :raises InvalidInputs: the inputs have errors (they would fail with the extra too).
    :raises MissingExtra: the inputs are fine, the extra is not installed.
    """
    missing = missing_modules(extra)
    if not missing:
        return
    from envkit.check.validate import ValidateRequest, validate
    from envkit.validators import CheckOptions

    report = validate(ValidateRequest(package=package, dataset=dataset, job=job,
                                      options=CheckOptions(allow_local_refs=True)))
    if report.errors:
        raise InvalidInputs(f"{len(report.errors)} validation error(s); fix them first",
                            report.errors)
    raise MissingExtra(command, extra, missing)
