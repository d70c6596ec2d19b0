"""Validate settings from ``envkit.toml`` or ``[tool.envkit]`` in ``pyproject.toml``.

Found as ruff finds its configuration: the closest file upward from each package wins (an
``envkit.toml`` before a ``pyproject.toml`` in the same directory; a ``pyproject.toml`` without
``[tool.envkit]`` is passed over). Command-line flags win over the file, and a
``[per-package."GLOB"]`` table (globs relative to the file's directory) over the file's top
level. Keys are spelled as the flags are: ``select``, ``extend-ignore``, ``gym-version`` ...

``packages = ["envs/*", ...]`` (top level only) makes the file's directory a workspace root, as
``[tool.uv.workspace] members`` and cargo's ``[workspace] members`` do: ``envkit validate`` there
validates those packages. Why explicit: a directory that merely holds packages is no package,
and the platform rejects it if uploaded; validating it must not pass.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

from envkit.errors import UsageError

__all__ = ["CONFIG_NAMES", "PROBE_DEFAULTS", "SETTING_DOCS", "Settings", "SettingsError",
           "SettingsFiles", "Workspace", "find_config", "parse_glibc", "parse_python",
           "settings_for", "workspace_at"]

CONFIG_NAMES = ("envkit.toml", "pyproject.toml")


class SettingsError(UsageError, ValueError):
    """A configuration file envkit cannot use (bad TOML, unknown key, wrong type)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a package's validation can be configured with; ``None``: not set here."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    extend_ignore: tuple[str, ...] = ()
    arch: str | None = None
    glibc: str | None = None
    python: str | None = None
    gym_version: str | None = None
    offline: bool | None = None
    strict: bool | None = None
    dataset: Path | None = None
    job: Path | None = None
    docs_url: str | None = None
    """Base URL of the rule reference site (``mkdocs build`` of envkit's ``docs/``) that
    diagnostics link to; unset: diagnostics carry no link."""
    probe_margin: float | None = None
    probe_repeats: int | None = None
    probe_rows: int | None = None
    probe_dead_rows_warn: float | None = None
    probe_zero_variance_warn: float | None = None
    probe_concurrency: int | None = None
    probe_rollout_timeout: float | None = None
    """``envkit probe``'s thresholds (``envkit.probe.thresholds`` documents each)."""
    leak_min_chars: int | None = None
    """EK507's shortest reference answer looked for in the prompt
    (``envkit.validators.dataset.leaks``)."""
    profile_pass_threshold: float | None = None
    """``envkit profile``: the reward at or above which a reply passes (``envkit.profile``)."""
    source: Path | None = field(default=None, compare=False)
    """The file these came from (``None``: command line or defaults)."""

    def over(self, base: Settings) -> Settings:
        """These settings where set, ``base`` elsewhere; ``extend-*`` lists add up."""
        merged = {f.name: getattr(self, f.name) for f in fields(self)
                  if getattr(self, f.name) is not None}
        merged["extend_select"] = base.extend_select + self.extend_select
        merged["extend_ignore"] = base.extend_ignore + self.extend_ignore
        merged["source"] = self.source or base.source
        return replace(base, **merged)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name.replace("_", "-")] = (
                list(value) if isinstance(value, tuple)
                else str(value) if isinstance(value, Path) else value
            )
        return out


_STR_KEYS = ("arch", "glibc", "python", "gym-version", "docs-url")
_URL_SCHEMES = ("https://", "http://", "file://")
_LIST_KEYS = ("select", "ignore", "extend-select", "extend-ignore")
_BOOL_KEYS = ("offline", "strict")
_PATH_KEYS = ("dataset", "job")
_FILE_KEYS = ("packages", "per-package")
"""Keys of the file's top level only: they describe the repository, not one package."""
PROBE_DEFAULTS: dict[str, int | float] = {
    "probe-margin": 0.1, "probe-repeats": 2, "probe-rows": 8, "probe-dead-rows-warn": 0.5,
    "probe-zero-variance-warn": 0.5, "probe-concurrency": 2, "probe-rollout-timeout": 600.0,
}
"""The probe thresholds' defaults, here beside the keys so ``--show-settings`` and the settings
reference print them; ``envkit.probe.thresholds.Thresholds`` takes its defaults from here and
documents what each means."""
SETTING_DOCS: dict[str, tuple[str, str]] = {
    "select": ("Rule codes or prefixes to report (as ruff's `select`).", '["EK"]: every rule'),
    "ignore": ("Rule codes or prefixes not to report.", "[]"),
    "extend-select": ("Codes or prefixes added to `select` (from a parent file too).", "[]"),
    "extend-ignore": ("Codes or prefixes added to `ignore` (from a parent file too).", "[]"),
    "arch": ("The training cluster's architecture: `x86_64` or `aarch64` (never the "
             "machine envkit runs on).", "the package's `wheels.lock`, else `x86_64`"),
    "glibc": ("The cluster's glibc floor, `2_17` to `2_40`: the oldest manylinux tag a "
              "wheel may need.", "the package's `wheels.lock`, else `2_28`"),
    "python": ("The cluster's CPython version.", "the package's `wheels.lock`, else `3.13`"),
    "gym-version": ("The nemo-gym version the training image runs: Gym's configs and "
                    "runtime pins are checked against it.", "0.7.0"),
    "offline": ("Judge the package for a cluster without egress: every install must come "
                "from `wheels/` (EK404, EK405 become errors).", "false"),
    "strict": ("Warnings fail the run too (exit 1).", "false"),
    "dataset": ("The package's rollout rows (a directory holding `training.jsonl`), relative "
                "to this file.", "none"),
    "job": ("The package's GRPO job JSON, relative to this file.", "none"),
    "docs-url": ("Where this documentation site is served: diagnostics then link to "
                 "`<docs-url>/rules/<CODE>.html` (SARIF `helpUri`).", "none: no links"),
    "probe-margin": ("A content-free reply scoring within this share of the reward range of "
                     "the reference answer's is gameable (EK801).", ""),
    "probe-repeats": ("Times each (reply, row) is scored; any spread is EK803.", ""),
    "probe-rows": ("Rows per agent the probe answers: the dataset's first N.", ""),
    "probe-dead-rows-warn": ("Warn when more than this share of rows gives every reply the "
                             "same reward; 100% is an error (EK804).", ""),
    "probe-zero-variance-warn": ("With `--model`: warn when more than this share of the "
                                 "policy's groups all get one reward; 100% is EK810.", ""),
    "probe-concurrency": ("Rollouts in flight while the panel is scored.", ""),
    "probe-rollout-timeout": ("Seconds a rollout may take; p99 over it at the job's "
                              "concurrency warns (EK806).", ""),
    "leak-min-chars": ("The shortest reference answer EK507 looks for in a row's prompt "
                       "(shorter ones match by chance).", ""),
    "profile-pass-threshold": ("`envkit profile`: a reply passes at this reward or above (a "
                               "row's pass rate counts them; `--keep` selects on it).", "1.0"),
}
"""Every key of ``Settings``: (what it means, its default as ``--show-settings`` prints it;
empty: the value where it is kept, ``PROBE_DEFAULTS`` or ``CheckOptions``).
``scripts/gen_docs.py`` writes the settings reference from these, the fields and the flags
that set the same fields; it refuses a field without an entry."""
_INT_KEYS = ("probe-repeats", "probe-rows", "probe-concurrency", "leak-min-chars")
_FLOAT_KEYS = ("probe-margin", "probe-dead-rows-warn", "probe-zero-variance-warn",
               "probe-rollout-timeout", "profile-pass-threshold")


def _parse(table: dict[str, Any], where: str, base: Path) -> Settings:
    values: dict[str, Any] = {}
    for key, value in table.items():
        attr = key.replace("-", "_")
        if key in _LIST_KEYS:
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
                raise SettingsError(f"{where}: `{key}` must be a list of rule codes")
            values[attr] = tuple(items)
        elif key in _STR_KEYS or key in _PATH_KEYS:
            if not isinstance(value, str):
                raise SettingsError(f"{where}: `{key}` must be a string")
            if key == "docs-url" and not value.startswith(_URL_SCHEMES):
                raise SettingsError(f"{where}: `docs-url` must be an http(s):// or file:// URL")
            values[attr] = (base / value) if key in _PATH_KEYS else value
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise SettingsError(f"{where}: `{key}` must be true or false")
            values[attr] = value
        elif key in _INT_KEYS or key in _FLOAT_KEYS:
            values[attr] = _number(key, value, where, integer=key in _INT_KEYS)
        elif key not in _FILE_KEYS:
            known = ", ".join((*_LIST_KEYS, *_STR_KEYS, *_BOOL_KEYS, *_PATH_KEYS, *_INT_KEYS,
                               *_FLOAT_KEYS, *_FILE_KEYS))
            raise SettingsError(f"{where}: unknown key `{key}` (known: {known})")
    return Settings(**values)


def _number(key: str, value: Any, where: str, *, integer: bool) -> int | float:
    """A threshold: an integer, or any number (the probe's ranges are the probe's to check;
    ``leak-min-chars`` is checked here, validate having no later place to refuse it)."""
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise SettingsError(f"{where}: `{key}` must be {'an integer' if integer else 'a number'}")
    if key == "leak-min-chars" and value < 1:
        raise SettingsError(f"{where}: `leak-min-chars` must be at least 1")
    return value if integer else float(value)


class _ConfigFile(NamedTuple):
    """One settings file read: its top-level settings, its per-package sections (by glob), and
    the workspace members it lists."""

    path: Path
    top: Settings
    per_package: tuple[tuple[str, Settings], ...]
    packages: tuple[str, ...] | None = None
    """The workspace's member globs (``None``: the file makes no workspace)."""


class Workspace(NamedTuple):
    """A directory whose own configuration file lists its packages (``packages = [...]``)."""

    root: Path
    config: Path
    patterns: tuple[str, ...]
    """Globs relative to ``root``, as written (``envs/*``, ``tools/**/env``)."""


class SettingsFiles:
    """The configuration files one run reads, each read once however many packages share it.

    Why held by the run, not cached per process: a second run in the same process (a tool that
    validates, edits the settings and validates again) reads what the file says then.
    """

    def __init__(self) -> None:
        self.read: dict[Path, _ConfigFile | None] = {}
        """Each file read, by path (``None``: a ``pyproject.toml`` without ``[tool.envkit]``)."""
        self.closest: dict[Path, _ConfigFile | None] = {}
        """The closest configuration at or above each directory looked up."""
        self.real_directories: dict[str, str] = {}
        """Directories' realpaths (``_resolved``)."""


def _read(path: Path) -> _ConfigFile | None:
    import tomllib  # only where a settings file exists: most runs have none

    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read settings: {exc}") from None
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("envkit")
        if data is None:
            return None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: [tool.envkit] must be a table")
    where = str(path)
    top = _parse(data, where, path.parent)
    per = data.get("per-package", {})
    if not isinstance(per, dict) or not all(isinstance(v, dict) for v in per.values()):
        raise SettingsError(f"{where}: `per-package` must be a table of tables")
    overrides = tuple((glob, _per_package(table, f"{where} [per-package.{glob!r}]", path))
                      for glob, table in per.items())
    members = _members(data["packages"], where) if "packages" in data else None
    return _ConfigFile(path, replace(top, source=path), overrides, members)


def _per_package(table: dict[str, Any], where: str, path: Path) -> Settings:
    misplaced = [key for key in _FILE_KEYS if key in table]
    if misplaced:
        msg = f"{where}: `{misplaced[0]}` belongs at the top level of the file, not per package"
        raise SettingsError(msg)
    return _parse(table, where, path.parent)


def _members(value: object, where: str) -> tuple[str, ...]:
    """``packages``: relative globs that stay inside the workspace root."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() for v in items):
        msg = f"{where}: `packages` must be a list of directory globs, e.g. [\"envs/*\"]"
        raise SettingsError(msg)
    for pattern in items:
        parts = Path(pattern).parts
        if Path(pattern).is_absolute() or ".." in parts:
            msg = (f"{where}: `packages` entry {pattern!r} must be relative to the file's "
                   "directory and stay below it (no absolute path, no `..`)")
            raise SettingsError(msg)
    return tuple(p.strip().rstrip("/") or "." for p in items)


def _config_in(directory: Path, files: SettingsFiles) -> _ConfigFile | None:
    """The configuration file of ``directory`` itself (``envkit.toml`` first), or ``None``."""
    for name in CONFIG_NAMES:
        candidate = directory / name
        if candidate.is_file():
            if candidate not in files.read:
                files.read[candidate] = _read(candidate)
            found = files.read[candidate]
            if found is not None:
                return found
    return None


def find_config(directory: Path, files: SettingsFiles) -> _ConfigFile | None:
    """The closest configuration at or above ``directory`` (absolute), or ``None``; what
    ``files`` holds is not read again."""
    if directory not in files.closest:
        found = _config_in(directory, files)
        parent = directory.parent
        if found is None and parent != directory:
            found = find_config(parent, files)
        files.closest[directory] = found
    return files.closest[directory]


def workspace_at(directory: Path, files: SettingsFiles | None = None) -> Workspace | None:
    """The workspace rooted at ``directory``: its own configuration file (not one further up,
    as in uv and cargo) sets ``packages``.

    :raises SettingsError: the directory's configuration file cannot be used.
    """
    config = _config_in(directory.resolve(), SettingsFiles() if files is None else files)
    if config is None or config.packages is None:
        return None
    return Workspace(directory, config.path, config.packages)


def settings_for(package: Path, cli: Settings, *, isolated: bool = False,
                 files: SettingsFiles | None = None) -> Settings:
    """The settings one package is validated with: defaults < file < per-package < flags;
    what ``files`` holds (the run's files read so far) is not read again.

    :raises SettingsError: the configuration file found cannot be used.
    """
    files = SettingsFiles() if files is None else files
    resolved = Settings()
    absolute = None if isolated else _resolved(package, files)
    config = None if absolute is None else find_config(absolute, files)
    if config is not None and absolute is not None:
        resolved = config.top.over(resolved)
        rel = absolute.relative_to(config.path.parent).as_posix()  # found above ``absolute``
        for glob, override in config.per_package:
            if fnmatch.fnmatch(rel, glob.rstrip("/")):
                resolved = replace(override, source=config.path).over(resolved)
    return cli.over(resolved)


def _resolved(package: Path, files: SettingsFiles) -> Path:
    """``package.resolve()``, its directory's realpath taken once per run: a realpath stats
    every level of the path, and the packages of a tree share their directory. A symlink, or a
    path ending in ``.``, ``..`` or a separator, is resolved whole."""
    path = os.fspath(package)
    head, name = os.path.split(path)
    if name in ("", ".", "..") or os.path.islink(path):  # noqa: PTH114 - str in, str out
        return Path(os.path.realpath(path))
    directories = files.real_directories
    if head not in directories:
        directories[head] = os.path.realpath(head)
    return Path(os.path.join(directories[head], name))  # noqa: PTH118 - the same


def parse_python(value: str) -> tuple[int, int]:
    """``3.13``, ``313`` or ``cp313`` -> ``(3, 13)``."""
    match = re.fullmatch(r"(?:cp)?3\.?(\d+)", value.strip())
    if not match:
        msg = f"python must look like 3.13, not {value!r}"
        raise SettingsError(msg)
    return 3, int(match.group(1))


def parse_glibc(value: str | None) -> tuple[int, int] | None:
    """``2_28``, ``2.28`` or ``manylinux_2_28`` -> ``(2, 28)``; 2_17..2_40 only."""
    if value is None:
        return None
    match = re.fullmatch(r"(?:manylinux_)?(\d+)[._](\d+)", value.strip())
    if not match or not (17 <= int(match.group(2)) <= 40) or match.group(1) != "2":
        msg = f"glibc must be 2_17 .. 2_40 (e.g. 2_28), not {value!r}"
        raise SettingsError(msg)
    return 2, int(match.group(2))
