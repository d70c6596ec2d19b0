"""The quick path: ``envkit validate`` as a pre-commit hook or a CI gate runs it, read without
click.

Why: click's import and parse cost ~10 ms of CPU beyond what envkit imports anyway (the small
package's whole run: 84 -> 74 ms, the interpreter's own start 17), more than validating the
package does, and a hook runs ``envkit validate FILES...`` with a few plain flags on every
commit. This module reads exactly those invocations and calls what the click command calls
(``envkit.cli.validate_core.validate``), rendering through the same ``envkit.cli._emit``.

It only reads what it is sure of and declines everything else, which click then parses with its
own messages: ``--help``, an unknown or misspelled option, a path that does not exist or cannot
be read, a value that is empty or starts with ``-``, ``--``, ``-`` (stdin), ``-o``,
``--show-settings``, ``--smoke`` and ``--probe``, and any run under shell completion
(``_ENVKIT_COMPLETE``, which click reads at every start). Declining is never an error: the
quick path may be faster than click, never different. ``tests/cli/test_quick.py`` holds it to
that: each argv it accepts must give click's own values, and an option added to the click
command that is neither read nor declined here fails the test.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from envkit.cli._emit import emit
from envkit.cli.validate_core import VALIDATE_FORMATS, validate
from envkit.model.target import ARCHES

__all__ = ["COMPLETE_VAR", "DECLINED", "parse", "run"]

_FORMAT = "output_format"
_FLAGS: dict[str, tuple[str | None, bool]] = {
    "--offline": ("offline", True), "--no-offline": ("offline", False),
    "--strict": ("strict", True), "--no-strict": ("strict", False),
    "--verify-hashes": ("verify_hashes", True), "--isolated": ("isolated", True),
    "--ignore-unowned-files": ("ignore_unowned_files", True),
    "--no-cache": (None, True),  # the replay layer's (``envkit.replay``): nothing to pass on
}
_VALUES = {"--arch": "arch", "--python": "python_version", "--glibc": "glibc",
           "--gym-version": "gym_version", "--dataset": "dataset", "--job": "job",
           "--output-format": _FORMAT, "--format": _FORMAT}
_MULTIPLE = {"--select": "select", "--ignore": "ignore", "--extend-select": "extend_select",
             "--extend-ignore": "extend_ignore", "--exclude": "exclude"}
_CHOICES: dict[str, tuple[str, ...]] = {"arch": tuple(ARCHES), _FORMAT: VALIDATE_FORMATS}
_COUNTS = {"--quiet": -1, "--verbose": 1, "q": -1, "v": 1}
_DEFAULTS: dict[str, Any] = {
    "paths": (), "dataset": None, "job": None, "arch": None, "python_version": None,
    "glibc": None, "gym_version": None, "offline": None, "strict": None,
    "verify_hashes": False, "select": (), "ignore": (), "extend_select": (),
    "extend_ignore": (), "exclude": (), "isolated": False, "ignore_unowned_files": False,
    "show_settings": False, "smoke": False, "probe": False,
}
"""``validate``'s keyword arguments as click gives them when no option is given."""

COMPLETE_VAR = "_ENVKIT_COMPLETE"
"""Set by a shell's completion script: click then prints completions, not a verdict."""

DECLINED = frozenset({"-o", "--output", "--show-settings", "--smoke", "--probe", "-h",
                      "--help"})
"""The click command's options this path leaves to click (the test checks the split)."""

Parsed = tuple[dict[str, Any], str, int]
"""``validate``'s keyword arguments, the output format, the verbosity (``-v`` minus ``-q``)."""


def run(args: list[str]) -> int | None:
    """Run ``envkit ARGS`` when the quick path reads them; None: click's to run."""
    parsed = parse(args)
    if parsed is None:
        return None
    params, fmt, verbosity = parsed
    if verbosity:  # nothing here logs (see ``envkit.cli``); set up as click's path does
        from envkit.cli._logging import configure_logging

        configure_logging(verbosity)
    try:
        result = validate(**params)
    except Exception as exc:  # shown as the click path shows it (imports click: rare)
        from envkit.cli.app import report_failure

        return report_failure(exc, args, fmt)
    return emit(result, fmt, None)


def parse(args: list[str]) -> Parsed | None:
    """What click would parse from ``args`` (``validate ...``), or None: not sure, decline."""
    if not args or args[0] != "validate" or os.environ.get(COMPLETE_VAR):
        return None
    params = dict(_DEFAULTS)
    many: dict[str, list[str]] = {dest: [] for dest in _MULTIPLE.values()}
    paths: list[str] = []
    fmt, verbosity = "human", 0
    rest, at = args[1:], 0
    while at < len(rest):
        arg = rest[at]
        at += 1
        if not arg.startswith("-"):
            paths.append(arg)
            continue
        counted = _count(arg)
        if counted is not None:
            verbosity += counted
            continue
        name, eq, value = arg.partition("=")
        if name in _FLAGS and not eq:
            dest, flag = _FLAGS[name]
            if dest is not None:
                params[dest] = flag
            continue
        if name not in _VALUES and name not in _MULTIPLE:
            return None  # --help, -o, --smoke, an unknown option, `--`, `-`: click's
        if not eq:
            if at == len(rest):
                return None
            value, at = rest[at], at + 1
        if not value or value.startswith("-"):
            return None
        if name in _MULTIPLE:
            many[_MULTIPLE[name]].append(value)
            continue
        dest = _VALUES[name]
        if value not in _CHOICES.get(dest, (value,)):
            return None
        if dest == _FORMAT:
            fmt = value
        else:
            params[dest] = value
    params.update({dest: tuple(values) for dest, values in many.items()})
    return _with_paths(params, paths, fmt, verbosity)


def _count(arg: str) -> int | None:
    """``-q``/``-v`` (also clustered: ``-qq``, ``-vq``) and their long forms: the sum, or None."""
    if arg in _COUNTS:
        return _COUNTS[arg]
    letters = arg[1:]
    if letters and not letters.startswith("-") and set(letters) <= {"q", "v"}:
        return sum(_COUNTS[c] for c in letters)
    return None


def _with_paths(params: dict[str, Any], paths: list[str], fmt: str,
                verbosity: int) -> Parsed | None:
    """The path values as click's ``click.Path(exists=True, path_type=Path)`` checks them
    (stat'ed, readable; the dataset no regular file, the job no directory), or None."""
    for value in paths:
        if _path_mode(value) is None:
            return None
    params["paths"] = tuple(Path(p) for p in paths)
    for dest, refused in (("dataset", stat.S_ISREG), ("job", stat.S_ISDIR)):
        value = params[dest]
        if value is None:
            continue
        mode = _path_mode(value)
        if mode is None or refused(mode):
            return None
        params[dest] = Path(value)
    return params, fmt, verbosity


def _path_mode(value: str) -> int | None:
    """``st_mode`` of an existing, readable path (click's default checks), else None."""
    try:
        mode = Path(value).stat().st_mode
    except (OSError, ValueError):  # ValueError: an embedded NUL
        return None
    return mode if os.access(value, os.R_OK) else None
