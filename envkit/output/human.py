"""A validate run for people (ruff-like, grouped by package) and for GitHub annotations.

Plain text with ANSI colours only on a terminal (and never with ``NO_COLOR``): no rendering
library, because a pre-commit hook pays every millisecond of start-up on every commit.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from envkit.model.diagnostics import Diagnostic, Severity
from envkit.validate.report import tally

if TYPE_CHECKING:
    from envkit.validate.report import Cause, Report, ValidationRun

__all__ = [
    "Console",
    "dash",
    "diagnostic_path",
    "escape",
    "render_github",
    "render_human",
    "severity_label",
    "summary_line",
]

_CODES = {"bold": "1", "dim": "2", "underline": "4", "red": "31", "green": "32", "yellow": "33",
          "cyan": "36"}
_MARKUP = re.compile(r"\[(/?)([a-z ]*)\]")


class Console:
    """``print`` with a ``[red bold]...[/]`` markup subset; colour only on a terminal."""

    def __init__(self, file: TextIO, *, color: bool | None = None) -> None:
        self.file = file
        isatty = getattr(file, "isatty", lambda: False)()
        self.color = (isatty and "NO_COLOR" not in os.environ) if color is None else color

    def _sub(self, match: re.Match[str]) -> str:
        if not self.color:
            return ""
        if match.group(1):
            return "\x1b[0m"
        return "\x1b[" + ";".join(_CODES[w] for w in match.group(2).split()) + "m"

    def print(self, text: str = "") -> None:
        self.file.write(_unescape(_MARKUP.sub(self._sub, text)) + "\n")


def escape(text: str) -> str:
    """Square brackets in user text are not markup."""
    return text.replace("[", "\x00").replace("]", "\x01")


def _unescape(text: str) -> str:
    return text.replace("\x00", "[").replace("\x01", "]")


def diagnostic_path(report: Report, diag: Diagnostic) -> str:
    """Where the reader opens the file a diagnostic is about: its path (relative to its input)
    joined to the directory of the input it belongs to (the package, dataset or job).

    Not ``envkit.model.package.display_path``, which makes a path printable on one line."""
    base: str | None
    if diag.input == "dataset":
        base = report.dataset
    elif diag.input == "job":
        base = str(Path(report.job).parent) if report.job else None
    else:
        base = report.root
    if base is None:
        return diag.path or "."
    return str(Path(base) / diag.path) if diag.path else base


def dash(value: float | None, spec: str) -> str:
    """``value`` formatted by ``spec``, or ``-`` where there is none (a table's empty cell)."""
    return "-" if value is None else format(value, spec)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def severity_label(diag: Diagnostic) -> str:
    """``error[EK105]`` / ``warning[EK113]`` (as rustc labels them), styled by severity.

    Why the word and not only the colour: colour is off in CI logs, with ``NO_COLOR`` and in a
    pipe, and a warning must still read as one that does not fail the run."""
    style = "red" if diag.severity is Severity.ERROR else "yellow"
    return f"[{style} bold]{escape(f'{diag.severity.value}[{diag.code}]')}[/]"


def _print_cause(report: Report, cause: Cause, console: Console) -> None:
    """The cause first, then how many findings follow from it, one of them as an example:
    the rest are the same finding for other files (``--output-format json`` lists each)."""
    follow = report.follow_ons(cause)
    console.print(f"[yellow bold]warning:[/] {escape(cause.text)}")
    console.print(f"  [cyan]= follows:[/] {_plural(len(follow), 'finding')} ({tally(follow)}); "
                  "`--output-format json` lists each, e.g.")
    first = follow[0]
    console.print(f"    {escape(diagnostic_path(report, first))}: {severity_label(first)} "
                  f"{escape(first.message)}")
    console.print(f"  [cyan]= help:[/] {escape(cause.hint)}")


def _print_diagnostics(report: Report, console: Console) -> None:
    for cause in report.causes:
        _print_cause(report, cause, console)
    for d in report.leading:
        where = diagnostic_path(report, d)
        if d.line:
            where += f":{d.line}" + (f":{d.column}" if d.column else "")
        console.print(f"[bold]{escape(where)}:[/] {severity_label(d)} {escape(d.message)}")
        console.print(f"  [cyan]= help:[/] {escape(d.hint)}")
    for note in report.loose_notes:
        console.print(f"[yellow bold]warning:[/] {escape(note)}")


def _verdict(report: Report) -> str:
    errors, warnings = len(report.errors), len(report.warnings)
    if report.valid:
        extra = f" ({_plural(warnings, 'warning')})" if warnings else ""
        return f"[green bold]valid:[/] {escape(_checked(report))}{extra}"
    strict = " (--strict: warnings fail)" if report.strict and not errors else ""
    return (f"[red bold]invalid:[/] {_plural(errors, 'error')}, "
            f"{_plural(warnings, 'warning')}{strict}")


def _checked(report: Report) -> str:
    parts = []
    if report.root is not None:
        parts.append(f"{report.format or 'unknown-format'} package")
    parts += [name for name in ("dataset", "job") if getattr(report, name) is not None]
    return ", ".join(parts)


def render_human(run: ValidationRun, console: Console) -> None:
    """``path:line:col: CODE message`` then the fix hint, as ruff prints them; with several
    packages, one section each and a summary line."""
    if not run.reports:
        console.print("nothing to validate: no package contains the given files")
        return
    if len(run.reports) == 1:
        _print_report(run.reports[0], console)
        return
    for report in run.reports:
        title = escape(report.root or "(no package)")
        console.print(f"[bold underline]{title}[/]")
        _print_report(report, console)
        console.print()
    console.print(summary_line(run))


def _print_report(report: Report, console: Console) -> None:
    _print_diagnostics(report, console)
    if report.root is not None and report.target_source != "default":
        console.print(f"[dim]target {report.target} (from {report.target_source})[/]")
    console.print(_verdict(report))


def summary_line(run: ValidationRun) -> str:
    bad = sum(not r.valid for r in run.reports)
    errors = sum(len(r.errors) for r in run.reports)
    warnings = sum(len(r.warnings) for r in run.reports)
    verdict = "[red bold]invalid:[/]" if bad else "[green bold]valid:[/]"
    return (f"{verdict} {_plural(len(run.reports), 'package')} checked, "
            f"{len(run.reports) - bad} valid, {bad} invalid; "
            f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')}")


def _gh_escape(value: str, *, prop: bool = False) -> str:
    # https://github.com/actions/toolkit/blob/main/packages/core/src/command.ts
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def render_github(run: ValidationRun) -> str:
    """GitHub Actions workflow commands: one annotation per diagnostic, columns included."""
    lines = []
    for report in run.reports:
        lines += [_gh_cause(report, cause) for cause in report.causes]
        for d in report.leading:
            level = "error" if d.severity is Severity.ERROR else "warning"
            props = f"file={_gh_escape(diagnostic_path(report, d), prop=True)}"
            if d.line:
                props += f",line={d.line}"
                if d.column:
                    props += f",col={d.column}"
            props += f",title={_gh_escape(d.code, prop=True)}"
            lines.append(f"::{level} {props}::{_gh_escape(f'{d.message} (fix: {d.hint})')}")
        lines += [f"::warning ::{_gh_escape(note)}" for note in report.loose_notes]
    return "\n".join(lines)


def _gh_cause(report: Report, cause: Cause) -> str:
    """One annotation for a cause and everything that follows from it (GitHub shows only the
    first few annotations of a step: 82 for one cause would hide the rest)."""
    follow = report.follow_ons(cause)
    files = ", ".join(dict.fromkeys(diagnostic_path(report, d) for d in follow[:5]))
    more = ", ..." if len(follow) > 5 else ""
    text = (f"{cause.text}; {len(follow)} findings follow from it ({tally(follow)}: {files}"
            f"{more}) (fix: {cause.hint})")
    codes = ", ".join(sorted({d.code for d in follow}))
    level = "error" if any(d.severity is Severity.ERROR for d in follow) else "warning"
    return f"::{level} title={_gh_escape(codes, prop=True)}::{_gh_escape(text)}"
