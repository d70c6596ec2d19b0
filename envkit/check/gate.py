"""The pre-upload gate: many packages, their settings and targets, one ``ValidationRun``.

``envkit validate PATH...`` calls ``run_gate``: discover the packages, resolve each one's
settings (config file, per-package overrides, flags), pick its target (flags, config, else the
package's own ``wheels.lock``), validate it, and collect one report with one verdict.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from envkit.check.columns import with_columns
from envkit.check.discovery import MANIFEST, Discovery, discover
from envkit.check.report import Report, ValidationRun
from envkit.check.settings import Settings, find_config, parse_glibc, parse_python, settings_for
from envkit.check.validate import ValidateRequest, validate
from envkit.model.diagnostics import parse_selectors
from envkit.model.target import Target
from envkit.validators import RULES, CheckOptions
from envkit.validators._base import DEFAULT_GYM_VERSION

__all__ = ["GateRequest", "GateUsageError", "TargetChoice", "choose_target", "gate_package",
           "resolve_settings", "run_gate", "selection"]

LOCK_NAME = "wheels.lock"
_LOCK_TARGET = re.compile(r"cp(\d)(\d+)-manylinux_(\d+)_(\d+)_(\w+)")


class GateUsageError(ValueError):
    """The request cannot be run as given (e.g. ``--dataset`` with several packages)."""


@dataclass(frozen=True)
class GateRequest:
    paths: tuple[Path, ...] = ()
    flags: Settings = field(default_factory=Settings)
    """What the command line set (``None`` fields: not given)."""
    exclude: tuple[str, ...] = ()
    verify_hashes: bool = False
    isolated: bool = False
    """Ignore configuration files (``--isolated``, as ruff)."""
    ignore_unowned_files: bool = False
    """Files in no package are skipped (pre-commit passes them all), not a usage error."""


@dataclass(frozen=True)
class TargetChoice:
    target: Target
    source: str
    note: str | None = None


def resolve_settings(package: Path | None, request: GateRequest) -> Settings:
    base = Path.cwd() if package is None else package
    return settings_for(base, request.flags, isolated=request.isolated)


def _lock_target(package: Path | None) -> dict[str, str] | None:
    if package is None or not (package / LOCK_NAME).is_file():
        return None
    try:
        text = json.loads((package / LOCK_NAME).read_text("utf-8")).get("target", "")
    except (OSError, ValueError, AttributeError):
        return None
    match = _LOCK_TARGET.fullmatch(str(text))
    if match is None:
        return None
    py_major, py_minor, g_major, g_minor, arch = match.groups()
    return {"arch": arch, "python": f"{py_major}.{py_minor}", "glibc": f"{g_major}_{g_minor}"}


def choose_target(package: Path | None, settings: Settings, flags: Settings) -> TargetChoice:
    """Explicit fields (flags, then config) win; the rest come from ``wheels.lock``."""
    lock = _lock_target(package) or {}
    explicit = {k: getattr(settings, k) for k in ("arch", "python", "glibc")
                if getattr(settings, k) is not None}
    fields = {**lock, **explicit}
    target = Target(arch=fields.get("arch", "x86_64"),
                    python=parse_python(fields.get("python", "3.13")),
                    glibc=parse_glibc(fields.get("glibc")))
    if explicit:
        given_by_flags = any(getattr(flags, k) is not None for k in explicit)
        source = "command line" if given_by_flags else str(settings.source)
    else:
        source = LOCK_NAME if lock else "default"
    note = None
    if explicit and lock:
        locked = Target(arch=lock["arch"], python=parse_python(lock["python"]),
                        glibc=parse_glibc(lock["glibc"]))
        if str(locked) != str(target):
            note = (f"target {target} ({source}) differs from the {locked} the package's "
                    f"{LOCK_NAME} was built for: its wheels are checked against {target}")
    return TargetChoice(target, source, note)


def selection(settings: Settings) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(select, ignore) of the resolved settings; a selector naming no rule is refused."""
    known = RULES.keys()
    select = parse_selectors(settings.select or (), known)
    if select:
        select += parse_selectors(settings.extend_select, known)
    else:
        parse_selectors(settings.extend_select, known)  # still refuse typos
    ignore = parse_selectors((*(settings.ignore or ()), *settings.extend_ignore), known)
    return select, ignore


def _one(package: Path | None, request: GateRequest, dataset: Path | None,
         job: Path | None) -> Report:
    settings = resolve_settings(package, request)
    choice = choose_target(package, settings, request.flags)
    select, ignore = selection(settings)
    options = CheckOptions(choice.target, settings.gym_version or DEFAULT_GYM_VERSION,
                           bool(settings.offline))
    dataset = dataset or settings.dataset
    job = job or settings.job
    report = validate(ValidateRequest(
        package=package, dataset=dataset, job=job, options=options, select=select,
        ignore=ignore, strict=bool(settings.strict), verify_hashes=request.verify_hashes,
    ))
    notes = (choice.note,) if choice.note else ()
    bases = {"package": package, "dataset": dataset, "job": job.parent if job else None}
    return replace(report, diagnostics=with_columns(report.diagnostics, bases),
                   root=str(package) if package else None,
                   target_source=choice.source, notes=notes,
                   dataset=str(dataset) if dataset else None, job=str(job) if job else None,
                   docs_url=settings.docs_url)


def _claim_by_config(found: Discovery) -> Discovery:
    """Files in a package's configured ``dataset`` dir or its ``job`` file stand for it.

    Why: pre-commit passes the dataset rows and job files a commit touches; they live outside
    the package, and only the configuration says which package they belong to.
    """
    packages = list(found.packages)
    unmatched = []
    for file in found.unmatched_files:
        owners = _configured_owners(file.resolve())
        packages += owners
        if not owners:
            unmatched.append(file)
    return Discovery(tuple(dict.fromkeys(packages)), tuple(unmatched))


def _configured_owners(file: Path) -> list[Path]:
    config = find_config(file.parent)
    if config is None:
        return []
    base = config.path.parent
    owners = []
    for glob, override in config.per_package:
        claims = (override.job is not None and override.job.resolve() == file) or (
            override.dataset is not None and file.is_relative_to(override.dataset.resolve()))
        if claims:
            owners += [_shown(p) for p in sorted(base.glob(glob.rstrip("/")))
                       if (p / MANIFEST).is_file()]
    return owners


def _shown(path: Path) -> Path:
    """Relative to the working directory when below it, as the user would name it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def run_gate(request: GateRequest) -> ValidationRun:
    """Validate every package ``request.paths`` names.

    :raises GateUsageError: ``--dataset``/``--job`` given for several packages, or nothing to do.
    :raises SettingsError, SelectorError: a configuration or selector that names no rule.
    :raises FileNotFoundError, NotADirectoryError: a named dataset or job does not exist.
    """
    found = discover(request.paths, request.exclude) if request.paths else Discovery(())
    if found.unmatched_files and not request.isolated:
        found = _claim_by_config(found)
    if found.unmatched_files and not request.ignore_unowned_files:
        names = ", ".join(str(f) for f in found.unmatched_files[:3])
        msg = (f"{names}: not in a package (no directory above holds nemo-environment.yaml); "
               "name a package directory, or pass --ignore-unowned-files")
        raise GateUsageError(msg)
    dataset, job = request.flags.dataset, request.flags.job
    if len(found.packages) > 1 and (dataset or job):
        msg = ("--dataset/--job belong to one package, but the paths hold "
               f"{len(found.packages)}: name the package, or set `dataset`/`job` per package "
               "in the configuration ([tool.envkit.per-package])")
        raise GateUsageError(msg)
    if not found.packages:
        if not (dataset or job) and not found.unmatched_files:
            raise GateUsageError("give a PACKAGE directory, --dataset DIR or --job FILE")
        if not (dataset or job):
            return ValidationRun(())
        return ValidationRun((_one(None, request, dataset, job),))
    return ValidationRun(tuple(_one(p, request, dataset, job) for p in found.packages))


def gate_package(package: Path, request: GateRequest) -> ValidationRun:
    """One package exactly as named (no discovery: a directory without a manifest is checked
    and reported, not skipped), with ``request.flags``' dataset and job: ``envkit submit``."""
    return ValidationRun((_one(package, request, request.flags.dataset, request.flags.job),))
