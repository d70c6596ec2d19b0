"""``validate()``: read the inputs once, run every check, filter, and return a Report."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from envkit.model.diagnostics import Diagnostic, Severity, selected
from envkit.model.package import load_package
from envkit.validate.columns import with_columns
from envkit.validate.report import Cause, Report
from envkit.validators import INTERNAL, CheckOptions, Inputs, checks_for, run_checks

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from envkit.model.package import Package
    from envkit.model.target import Target
    from envkit.model.tree import FileStat, Tree
    from envkit.model.wheelfile import WheelFile
    from envkit.validators import Check

__all__ = ["INTERNAL_ERROR", "TargetDisagreement", "ValidateRequest", "read_package", "validate",
           "validate_inputs"]

INTERNAL_ERROR = INTERNAL.code
"""The safety net's code (``envkit.validators.INTERNAL``): a check that raised, so that a bug
still yields a report, not a traceback."""


class TargetDisagreement(NamedTuple):
    """The chosen target is not the one the package's ``wheels.lock`` names.

    Why a second run, not a rule: the findings a target explains are whatever differs between
    the two targets; validating against the lock's target says exactly that.
    """

    locked: Target
    text: str
    hint: str


@dataclass(frozen=True, slots=True)
class ValidateRequest:
    """One validate run over at most one package, dataset and job: what to read, how to check
    it, and which rules to report."""

    package: Path | None = None
    dataset: Path | None = None
    job: Path | None = None
    options: CheckOptions = field(default_factory=CheckOptions)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    strict: bool = False
    verify_hashes: bool = False
    no_cache: bool = False
    """Read every byte now: no store of envkit's is read or written (``--no-cache``)."""
    target_source: str = "default"
    """Where ``options.target`` came from, for the report (``command line``, a config file...)."""
    notes: tuple[str, ...] = ()
    """What the caller found that is not a rule violation (the report carries it)."""
    package_as: Path | None = None
    dataset_as: Path | None = None
    """Where the user finds ``package`` / ``dataset`` when they are a staged copy, validated
    before it moves there: the report names these."""
    leading: tuple[Diagnostic, ...] = ()
    """What the caller found before any check could run (EK100 for a directory that is not a
    package): reported first, whatever the selection."""
    docs_url: str | None = None
    """The rule reference site the report's diagnostics link to (``docs-url``); None: none."""
    disagreement: TargetDisagreement | None = None
    """Set when a target was chosen that the lock disagrees with: the findings that follow from
    that choice become one ``Cause``."""


def read_package(root: Path, *, verify_hashes: bool = False, no_cache: bool = False) -> Package:
    """``load_package`` as validation reads a package: the facts of wheels and the hashes of
    files unchanged since an earlier run come from envkit's cache (``envkit.supply.wheelfacts``,
    ``envkit.supply.treestamps``); ``--verify-hashes`` reads every byte again, ``--no-cache``
    reads everything without any store."""
    if no_cache:
        return load_package(root, verify_hashes=verify_hashes)
    return load_package(root, verify_hashes=verify_hashes, wheel_reader=_stored_facts,
                        tree_hasher=None if verify_hashes else _stamped_tree)


def _stored_facts(file: Path, rel: str | None = None, *, deep: bool = False) -> WheelFile:
    """The cache's reader, imported at the first wheel (a package without one never pays)."""
    from envkit.supply.cache import cache_root
    from envkit.supply.wheelfacts import WheelFacts

    return WheelFacts(cache_root() / "wheel-facts").read(file, rel, deep=deep)


def _stamped_tree(root: Path, files: Mapping[str, FileStat | None],
                  read: Mapping[str, str]) -> Tree:
    """The package digest (EK209's), unchanged files' hashes from the cache."""
    from envkit.model.provenance import PACKAGE_PURPOSE, package_tree
    from envkit.supply.cache import cache_root
    from envkit.supply.treestamps import rescan

    return rescan(root, PACKAGE_PURPOSE,
                  lambda stamps: package_tree(root, files, stamps, seen=files, read=read),
                  cache_root() / "tree-stamps")


def validate(request: ValidateRequest, *, package: Package | None = None) -> Report:
    """Validate what ``request`` names; ``package``: the model of ``request.package`` when the
    caller has read it already, so the tree is read once.

    :raises FileNotFoundError, NotADirectoryError: a named input does not exist (usage error).
    """
    if package is None and request.package:
        package = read_package(request.package, verify_hashes=request.verify_hashes,
                               no_cache=request.no_cache)
    # The dataset and job models load only when given: a hook validates packages.
    if request.dataset:
        from envkit.model.dataset import load_dataset
    if request.job:
        from envkit.model.jobfile import load_job
    inputs = Inputs(
        package=package,
        dataset=load_dataset(request.dataset) if request.dataset else None,
        job=load_job(request.job) if request.job else None,
        options=request.options,
    )
    return validate_inputs(inputs, request)


def validate_inputs(inputs: Inputs, request: ValidateRequest | None = None) -> Report:
    """Validate models the caller has already read; ``request`` for the selection and how the
    report names them (its paths are not read again).

    Why a second entry: ``envkit train`` validates the very objects it trains on.
    """
    request = request or ValidateRequest(options=inputs.options)
    package = inputs.package
    diagnostics = tuple(
        d._replace(path=_text(d.path), message=_text(d.message), hint=_text(d.hint))
        for d in with_columns(run_checks(inputs, _guarded_checks(checks_for(inputs))), inputs)
        if selected(d.code, request.select, request.ignore)
        or (d.code == INTERNAL_ERROR and INTERNAL_ERROR not in request.ignore)
    )
    diagnostics = request.leading + diagnostics
    return Report(
        format=_text(package.format) if package and package.format else None,
        name=_text(package.name) if package and package.name else None,
        target=str(inputs.options.target),
        diagnostics=diagnostics,
        strict=request.strict,
        root=_named(request.package_as or request.package),
        target_source=request.target_source,
        notes=request.notes,
        dataset=_named(request.dataset_as or request.dataset),
        job=_named(request.job),
        causes=_causes(request, diagnostics),
        docs_url=request.docs_url,
    )


def _causes(request: ValidateRequest, diagnostics: tuple[Diagnostic, ...]) -> tuple[Cause, ...]:
    """The findings that validating against the lock's target would not report, as one cause
    shown first instead of one wheel after another."""
    why = request.disagreement
    if why is None or not diagnostics:
        return ()
    baseline_request = replace(request, options=replace(request.options, target=why.locked),
                               disagreement=None, leading=())
    baseline = {_where(d) for d in validate(baseline_request).diagnostics}
    follow = tuple(i for i, d in enumerate(diagnostics) if _where(d) not in baseline)
    return (Cause(why.text, why.hint, follow),) if follow else ()


def _where(d: Diagnostic) -> tuple[str, str, int | None]:
    """What a finding is about, whatever target its message names."""
    return d.code, d.path, d.line


def _named(path: Path | None) -> str | None:
    return None if path is None else str(path)


@functools.lru_cache(maxsize=4)
def _guarded_checks(checks: tuple[Check, ...]) -> list[Check]:
    """``checks``, guarded: wrapped once per process, not once per package validated."""
    return [_guarded(check) for check in checks]


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
    """``value`` encodable as UTF-8, lone surrogates shown as ``\\xNN`` / ``\\udcff`` text, so
    every output format can write it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:  # bytes a file name carried: shown as \xNN, as display_path does
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # any other lone surrogate: shown as \udNNN
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value
