"""The pre-upload gate: many packages, their settings and targets, one ``ValidationRun``.

``envkit validate PATH...`` calls ``run_gate``: discover the packages (no PATH: the current
directory, as ruff checks ``.``), resolve each one's settings (config file, per-package
overrides, flags), pick its target (flags, config, else the package's own ``wheels.lock``),
validate it, and collect one report with one verdict. A named directory that is no package is
reported as such (EK100), never searched for packages to pass instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from envkit.errors import UsageError
from envkit.model.diagnostics import Diagnostic, parse_selectors
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.model.package import LOCK_NAME, MANIFEST
from envkit.model.target import Target
from envkit.validate.discovery import Discovery, discover, is_package_root, members
from envkit.validate.report import Report, ValidationRun
from envkit.validate.settings import (
    CONFIG_NAMES,
    PROBE_DEFAULTS,
    Settings,
    SettingsFiles,
    find_config,
    parse_glibc,
    parse_python,
    settings_for,
    workspace_at,
)
from envkit.validate.validate import TargetDisagreement, ValidateRequest, read_package, validate
from envkit.validate.workers import fork_map
from envkit.validators import KNOWN_RULES, CheckOptions
from envkit.validators.manifest import EK100

if TYPE_CHECKING:
    from envkit.model.package import Package

__all__ = [
    "GateRequest",
    "GateUsageError",
    "TargetChoice",
    "choose_target",
    "discover_for",
    "gate_package",
    "one_package",
    "resolve_settings",
    "run_gate",
    "selection",
    "shown_settings",
]


class GateUsageError(UsageError, ValueError):
    """The request cannot be run as given (e.g. ``--dataset`` with several packages)."""


@dataclass(frozen=True, slots=True)
class GateRequest:
    """``envkit validate`` as the command line asked for it, before settings files are read."""

    paths: tuple[Path, ...] = ()
    flags: Settings = field(default_factory=Settings)
    """What the command line set (``None`` fields: not given)."""
    exclude: tuple[str, ...] = ()
    verify_hashes: bool = False
    no_cache: bool = False
    """No store of envkit's is read or written (``--no-cache``, ``ENVKIT_NO_CACHE=1``)."""
    isolated: bool = False
    """Ignore configuration files (``--isolated``, as ruff)."""
    ignore_unowned_files: bool = False
    """Files in no package are skipped (pre-commit passes them all), not a usage error."""
    workers: int | None = None
    """Processes validating packages at once (``None``: one per core)."""
    files: SettingsFiles = field(default_factory=SettingsFiles, compare=False, repr=False)
    """The settings files this request's run has read (another request reads them anew)."""


class TargetChoice(NamedTuple):
    """The target a package is judged for and where that choice came from."""

    target: Target
    source: str
    note: str | None = None
    locked: Target | None = None
    """The ``wheels.lock`` target when ``target`` differs from it (the cause of what only the
    chosen target reports)."""


def resolve_settings(package: Path | None, request: GateRequest) -> Settings:
    base = Path.cwd() if package is None else package
    return settings_for(base, request.flags, isolated=request.isolated, files=request.files)


def _lock_target(package: Package | Path | None) -> tuple[dict[str, str] | None, str | None]:
    """``(settings fields, None)`` of the target ``wheels.lock`` was built for, or ``(None,
    why not)`` when the package has a lock that names none (``(None, None)``: no lock). A path
    (a package not loaded) is read through ``load_package``'s lock reader."""
    if isinstance(package, Path):
        from envkit.model.lock import read_lock

        doc = read_lock(package / LOCK_NAME) if (package / LOCK_NAME).is_file() else None
    else:
        doc = package.lock if package is not None else None
    if doc is None:
        return None, None
    if doc.lock is None:
        return None, f"the package's {LOCK_NAME} cannot be used ({doc.error})"
    target = doc.lock.target_spec
    if target is None:
        return None, (f"the package's {LOCK_NAME} names no target envkit knows "
                      f"({doc.lock.target!r}, expected e.g. 'cp313-manylinux_2_28_x86_64')")
    return {"arch": target.arch, "python": "{}.{}".format(*target.python),
            "glibc": "{}_{}".format(*target.glibc_floor)}, None


def choose_target(package: Package | Path | None, settings: Settings, flags: Settings
                  ) -> TargetChoice:
    """Explicit fields (flags, then config) win; the rest come from ``wheels.lock``."""
    found, unusable = _lock_target(package)
    lock = found or {}
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
    note = f"{unusable}: checking against {target} ({source})" if unusable else None
    if explicit and lock:
        locked = Target(arch=lock["arch"], python=parse_python(lock["python"]),
                        glibc=parse_glibc(lock["glibc"]))
        if str(locked) != str(target):
            note = (f"target {target} ({source}) differs from the {locked} the package's "
                    f"{LOCK_NAME} was built for: its wheels are checked against {target}")
            return TargetChoice(target, source, note, locked)
    return TargetChoice(target, source, note)


def selection(settings: Settings) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(select, ignore) of the resolved settings; a selector naming no rule is refused."""
    known = KNOWN_RULES.keys()
    select = parse_selectors(settings.select or (), known)
    if select:
        select += parse_selectors(settings.extend_select, known)
    else:
        parse_selectors(settings.extend_select, known)  # still refuse typos
    ignore = parse_selectors((*(settings.ignore or ()), *settings.extend_ignore), known)
    return select, ignore


def shown_settings(package: Path | None, request: GateRequest) -> dict[str, object]:
    """``--show-settings``: what ``package`` is validated with, resolved as ruff shows it (the
    target from flags, config or ``wheels.lock``, and the defaults where nothing is set)."""
    settings = resolve_settings(package, request)
    choice = choose_target(package, settings, request.flags)
    values = settings.as_dict()
    major, minor = choice.target.glibc_floor
    values.update({
        "select": values["select"] if settings.select is not None else ["EK"],
        "ignore": values["ignore"] if settings.ignore is not None else [],
        "arch": choice.target.arch, "python": "{}.{}".format(*choice.target.python),
        "glibc": f"{major}_{minor}", "target": str(choice.target),
        "target-source": choice.source,
        "gym-version": settings.gym_version or DEFAULT_GYM_VERSION,
        "offline": bool(settings.offline), "strict": bool(settings.strict),
        "leak-min-chars": settings.leak_min_chars or CheckOptions().leak_min_chars,
    })
    values.update({key: default for key, default in PROBE_DEFAULTS.items()
                   if values.get(key) is None})
    return values


def _one(package: Path | None, request: GateRequest, dataset: Path | None,
         job: Path | None) -> Report:
    settings = resolve_settings(package, request)
    is_package = package is None or is_package_root(package)
    pkg = (read_package(package, verify_hashes=request.verify_hashes, no_cache=request.no_cache)
           if package and is_package else None)
    choice = choose_target(pkg, settings, request.flags)
    select, ignore = selection(settings)
    options = CheckOptions(choice.target, settings.gym_version or DEFAULT_GYM_VERSION,
                           bool(settings.offline))
    if settings.leak_min_chars is not None:
        options = replace(options, leak_min_chars=settings.leak_min_chars)
    dataset = dataset or settings.dataset
    job = job or settings.job
    return validate(ValidateRequest(
        package=package if is_package else None, package_as=package, dataset=dataset, job=job,
        options=options, select=select, ignore=ignore, strict=bool(settings.strict),
        verify_hashes=request.verify_hashes, no_cache=request.no_cache,
        target_source=choice.source,
        notes=(choice.note,) if choice.note else (),
        leading=() if is_package or package is None else (_not_a_package(package, request),),
        disagreement=_disagreement(choice), docs_url=settings.docs_url,
    ), package=pkg)


def _disagreement(choice: TargetChoice) -> TargetDisagreement | None:
    """The lock's target, when another was named: what differs follows from that choice."""
    if choice.note is None or choice.locked is None:
        return None
    major, minor = choice.target.glibc_floor
    hint = (f"Check against the target the package was built for (drop `--arch`/`--python`/"
            f"`--glibc` and the configuration's target), or rebuild it for {choice.target}: "
            f"`envkit build --arch {choice.target.arch} --glibc {major}_{minor}`.")
    return TargetDisagreement(choice.locked, choice.note, hint)


def _not_a_package(path: Path, request: GateRequest) -> Diagnostic:
    """EK100 for a directory without a manifest, whatever the selection: a selection that hid
    this would pass a directory no check looked at. Nothing else is read from it (a repository
    root's files would only bury the one finding that matters)."""
    from envkit.validate.wrong_root import wrong_root  # a directory that is no package only

    message, hint = wrong_root(path, request.exclude)
    return EK100.at(MANIFEST, message, hint=hint)


def _claim_by_config(found: Discovery, request: GateRequest) -> Discovery:
    """Files in a package's configured ``dataset`` dir or its ``job`` file stand for it; a
    workspace root's configuration file stands for every member.

    Why: pre-commit passes the dataset rows, job files and settings a commit touches; only the
    configuration says which packages they concern.
    """
    packages = list(found.packages)
    unmatched = []
    for file in found.unmatched_files:
        owners = (_workspace_members_of(file, request)
                  or _configured_owners(file.resolve(), request.files))
        packages += owners
        if not owners:
            unmatched.append(file)
    return Discovery(tuple(dict.fromkeys(packages)), tuple(unmatched))


def _workspace_members_of(file: Path, request: GateRequest) -> list[Path]:
    space = workspace_at(file.parent, request.files) if file.name in CONFIG_NAMES else None
    if space is None or space.config != file.resolve():
        return []
    return members(space, request.exclude)


def _configured_owners(file: Path, files: SettingsFiles) -> list[Path]:
    config = find_config(file.parent, files)
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
    found = discover_for(request)
    if found.unmatched_files and not request.isolated:
        found = _claim_by_config(found, request)
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
    if not found.packages and not (dataset or job):
        if not found.unmatched_files:
            msg = "nothing to validate: `--exclude` skips every package the paths name"
            raise GateUsageError(msg)
        return ValidationRun(())
    packages = found.packages or (None,)  # no package: the dataset or job alone
    return ValidationRun(tuple(fork_map(lambda p: _one(p, request, dataset, job), packages,
                                        request.workers)))


def discover_for(request: GateRequest) -> Discovery:
    """The directories ``request`` names; with no PATH, the current directory, unless it is
    neither a package nor a workspace root and ``--dataset``/``--job`` say what to check.

    :raises SettingsError: a workspace whose ``packages`` cannot be used.
    """
    paths = request.paths
    if not paths:
        here = Path()
        known = is_package_root(here) or (not request.isolated
                                           and workspace_at(here, request.files))
        given = request.flags.dataset is not None or request.flags.job is not None
        paths = (here,) if known or not given else ()
    return discover(paths, request.exclude, isolated=request.isolated, files=request.files)


def gate_package(package: Path, request: GateRequest) -> ValidationRun:
    """One package exactly as named (no discovery: a directory without a manifest is checked
    and reported, not skipped), with ``request.flags``' dataset and job: ``envkit submit``."""
    return ValidationRun((_one(package, request, request.flags.dataset, request.flags.job),))


def one_package(request: GateRequest, flag: str) -> Path:
    """The one package ``request`` names (no PATH: `.`), for ``flag`` (``--smoke``,
    ``--probe``): the servers run under exactly the settings and target validate resolves.

    :raises GateUsageError: the paths hold no package or several.
    """
    packages = discover_for(request).packages
    if len(packages) != 1:
        msg = (f"{flag} runs one package, but the paths hold {len(packages)}: "
               "name exactly one package directory")
        raise GateUsageError(msg)
    return Path(packages[0])
