"""Render a SmokeReport for people, for machines (JSON) and as GitHub annotations."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from envkit.render import render_github as render_static_github
from envkit.render import render_human as render_static_human

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

    from envkit.smoke.report import Failure, SmokeReport

__all__ = ["render_github", "render_human", "render_json"]


def render_json(report: SmokeReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False)


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _failure_lines(console: Console, failure: Failure, indent: str = "  ") -> None:
    from rich.markup import escape

    code = f"[red bold]{failure.code}[/] " if failure.code else ""
    console.print(f"{indent}{code}{escape(failure.message)}", highlight=False, soft_wrap=True)
    if failure.log_tail:
        for line in failure.log_tail.splitlines():
            console.print(f"{indent}  | {line}", markup=False, highlight=False, soft_wrap=True)


def render_human(report: SmokeReport, console: Console, package: Path) -> None:
    """Static findings (if any), a table of servers, the agents' rewards, then the verdict."""
    from rich.markup import escape

    if report.static is not None and report.static.diagnostics:
        render_static_human(report.static, console, {"package": package})
    if report.isolation:
        console.print(f"offline: {escape(report.isolation['detail'])}", highlight=False,
                      soft_wrap=True)
    for s in report.servers:
        mark = "[green]ready[/]" if s.ready else "[red]not ready[/]"
        reward = "" if s.first_reward is None else f"  first reward {s.first_reward:g}"
        console.print(f"{escape(s.name)} ({escape(str(s.server_type))}): {mark} "
                      f"{_secs(s.ready_s)}{reward}", highlight=False, soft_wrap=True)
        if s.failure is not None:
            _failure_lines(console, s.failure)
    for a in report.agents:
        rewards = ", ".join(f"{r:g}" for r in a.rewards) or "none"
        note = " (minimal row: no dataset row named it)" if a.synthetic_rows else ""
        console.print(f"agent {escape(a.agent)}: rewards {rewards}{note}", highlight=False,
                      soft_wrap=True)
        for failure in a.failures:
            _failure_lines(console, failure)
    shown = {id(s.failure) for s in report.servers}
    if report.failure is not None and id(report.failure) not in shown:
        _failure_lines(console, report.failure, indent="")
    t = report.timings
    times = " ".join(f"{k.removesuffix('_s')}={v:.1f}s" for k, v in t.items())
    verdict = "[green bold]passed:[/]" if report.passed else "[red bold]failed:[/]"
    console.print(f"{verdict} smoke ({report.stage}) {times}", highlight=False, soft_wrap=True)


def _escape(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return value.replace(":", "%3A").replace(",", "%2C") if prop else value


def render_github(report: SmokeReport, package: Path) -> str:
    """``::error`` per failed server/agent, anchored at the manifest (servers have no line)."""
    if report.static is not None and not report.static.valid:
        return render_static_github(report.static, {"package": package})
    manifest = _escape(str(package / "nemo-environment.yaml"), prop=True)
    lines = []
    failures = [(s.name, s.failure) for s in report.servers if s.failure]
    failures += [(a.agent, f) for a in report.agents for f in a.failures]
    if report.failure is not None and all(f is not report.failure for _, f in failures):
        failures.append(("smoke", report.failure))
    for who, failure in failures:
        title = _escape(f"{failure.code or 'smoke'} {who}", prop=True)
        text = failure.message + (f"\n{failure.log_tail}" if failure.log_tail else "")
        lines.append(f"::error file={manifest},title={title}::{_escape(text)}")
    return "\n".join(lines)
