"""``validate()``: read the inputs once, run every check, filter, and return a Report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from envkit.dataset import load_dataset
from envkit.diagnostics import selected
from envkit.job import load_job
from envkit.package import load_package
from envkit.report import Report
from envkit.validators import CheckOptions, Inputs, run_checks

__all__ = ["ValidateRequest", "validate"]


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
    diagnostics = [
        d for d in run_checks(inputs) if selected(d.code, request.select, request.ignore)
    ]
    return Report(
        format=package.format if package else None,
        name=package.name if package else None,
        target=str(request.options.target),
        diagnostics=tuple(diagnostics),
        strict=request.strict,
    )
