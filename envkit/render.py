"""Render a Report for people (ruff-like), for machines (JSON) and for GitHub annotations."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from envkit.diagnostics import Diagnostic, Severity

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from rich.console import Console

    from envkit.report import Report

__all__ = ["render_github", "render_human", "render_json"]


def _display_path(bases: Mapping[str, Path | None], diag: Diagnostic) -> str:
    """The diagnostic's path joined to the directory of the input it belongs to."""
    base = bases.get(diag.input)
    if base is None:
        return diag.path or "."
    return str(base / diag.path) if diag.path else str(base)


def _location(bases: Mapping[str, Path | None], diag: Diagnostic) -> str:
    path = _display_path(bases, diag)
    return f"{path}:{diag.line}" if diag.line else path


def render_human(report: Report, console: Console, bases: Mapping[str, Path | None]) -> None:
    """``path:line: CODE message`` then the fix hint, as ruff prints them."""
    from rich.markup import escape  # lazy: rich costs ~50 ms

    for d in report.diagnostics:
        style = "red" if d.severity is Severity.ERROR else "yellow"
        where = escape(_location(bases, d))
        console.print(
            f"[bold]{where}:[/] [{style} bold]{d.code}[/] {escape(d.message)}",
            highlight=False,
            soft_wrap=True,
        )
        console.print(f"  [cyan]= help:[/] {escape(d.hint)}", highlight=False, soft_wrap=True)
    errors, warnings = len(report.errors), len(report.warnings)
    if report.valid:
        extra = f" ({warnings} warning{'s' * (warnings != 1)})" if warnings else ""
        console.print(f"[green bold]valid:[/] {escape(_checked(report, bases))}{extra}")
    else:
        console.print(
            f"[red bold]invalid:[/] {errors} error{'s' * (errors != 1)}, "
            f"{warnings} warning{'s' * (warnings != 1)}"
            + (" (--strict: warnings fail)" if report.strict and not errors else "")
        )


def _checked(report: Report, bases: Mapping[str, Path | None]) -> str:
    parts = []
    if bases.get("package") is not None:
        parts.append(f"{report.format or 'unknown-format'} package")
    parts += [name for name in ("dataset", "job") if bases.get(name) is not None]
    return ", ".join(parts)


def render_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False)


def _gh_escape(value: str, *, prop: bool = False) -> str:
    # https://github.com/actions/toolkit/blob/main/packages/core/src/command.ts
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def render_github(report: Report, bases: Mapping[str, Path | None]) -> str:
    lines = []
    for d in report.diagnostics:
        level = "error" if d.severity is Severity.ERROR else "warning"
        file = _display_path(bases, d)
        props = f"file={_gh_escape(file, prop=True)}"
        if d.line:
            props += f",line={d.line}"
        props += f",title={_gh_escape(d.code, prop=True)}"
        lines.append(f"::{level} {props}::{_gh_escape(f'{d.message} (fix: {d.hint})')}")
    return "\n".join(lines)
