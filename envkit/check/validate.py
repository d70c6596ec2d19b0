"""``validate()``: read the inputs once, run every check, filter, and return a Report."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.check.report import Report
from envkit.model.dataset import load_dataset
from envkit.model.diagnostics import Diagnostic, Severity, selected
from envkit.model.jobfile import load_job
from envkit.model.package import load_package
from envkit.validators import CHECKS, CheckOptions, Inputs, run_checks

if TYPE_CHECKING:
    from collections.abc import Iterable

    from envkit.validators import Check

__all__ = ["INTERNAL_ERROR", "ValidateRequest", "validate", "validate_inputs"]

INTERNAL_ERROR = "EK000"
"""The code of the safety net: a check that raised. No input is meant to reach it (every
fixture is tested not to); it exists so that a bug still yields a report, not a traceback."""


@dataclass(frozen=True)
class ValidateRequest:
    package: Path | None = None
    dataset: Path | None = None
    job: Path | None = None
    options: CheckOptions = field(default_factory=CheckOptions)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    strict: bool = False
    verify_hashes: bool = False


def validate(request: ValidateRequest) -> Report:
    """Validate what ``request`` names.

    :raises FileNotFoundError, NotADirectoryError: a named input does not exist (usage error).
    """
    package = (
        load_package(request.package, verify_hashes=request.verify_hashes)
        if request.package
        else None
    )
    inputs = Inputs(
        package=package,
        dataset=load_dataset(request.dataset) if request.dataset else None,
        job=load_job(request.job) if request.job else None,
        options=request.options,
    )
    return validate_inputs(
        inputs, select=request.select, ignore=request.ignore, strict=request.strict
    )


def validate_inputs(
    inputs: Inputs,
    *,
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    strict: bool = False,
) -> Report:
    """Validate models the caller has already read (``load_package``, ``load_dataset``,
    ``load_job``).

    Why a second entry: ``envkit train`` reads the job, package and dataset once and trains on
    what it read; validating those same objects means the run is checked exactly as it starts.
    """
    package = inputs.package
    diagnostics = [
        _printable(d)
        for d in run_checks(inputs, [_guarded(check) for check in CHECKS])
        if d.code == INTERNAL_ERROR or selected(d.code, select, ignore)
    ]
    return Report(
        format=_text(package.format) if package and package.format else None,
        name=_text(package.name) if package and package.name else None,
        target=str(inputs.options.target),
        diagnostics=tuple(diagnostics),
        strict=strict,
    )


def _guarded(check: Check) -> Check:
    """``check``, with an exception it raises turned into one EK000 diagnostic naming it; what
    it found before raising is kept."""

    @functools.wraps(check)
    def guarded(inputs: Inputs) -> Iterable[Diagnostic]:
        found: list[Diagnostic] = []
        try:
            found.extend(check(inputs))
        except Exception as exc:  # the safety net: reported, never hidden
            name = getattr(check, "__name__", repr(check))
            message = f"internal error in check `{name}`: {type(exc).__name__}: {exc}"
            found.append(Diagnostic(
                INTERNAL_ERROR, Severity.ERROR, "", None, message[:500],
                "This is a bug in envkit, not a verdict on the input: report it with this "
                "message. The other checks ran; their findings are listed.",
            ))
        return found

    return guarded


def _text(value: str) -> str:
    """``value`` encodable as UTF-8: lone surrogates (undecodable file-name bytes, or a
    ``"\\udcff"`` escape in YAML or JSON) become ``\\xNN`` / ``\\udcff`` text, so every output
    format can write it and JSON output stays valid UTF-8."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:  # bytes a file name carried: shown as \xNN, as display_path does
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # any other lone surrogate: shown as \udNNN
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _printable(diag: Diagnostic) -> Diagnostic:
    return diag._replace(path=_text(diag.path), message=_text(diag.message), hint=_text(diag.hint))
