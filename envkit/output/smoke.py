"""Render a smoke outcome for people, for machines (JSON), as GitHub annotations and as SARIF.

``envkit.output.render`` dispatches a ``SmokeOutcome`` here; the static findings are printed with
the validate renderers, the spin-up verdict (servers, agents, failures) after them.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from envkit.check.report import ValidationRun
from envkit.output.human import Console, escape
from envkit.output.human import render_github as render_static_github
from envkit.output.human import render_human as render_static_human

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.smoke.report import Failure, SmokeOutcome, SmokeReport

__all__ = ["render_github", "render_human", "render_json", "render_sarif", "render_smoke"]


def render_smoke(outcome: SmokeOutcome, fmt: str) -> int:
    """Print ``outcome`` in ``fmt`` on stdout; 0 when the smoke passed, else 1."""
    report, package = outcome.report, outcome.package
    if fmt == "json":
        text = render_json(report)
    elif fmt == "github":
        text = render_github(report, package)
    elif fmt == "sarif":
        text = json.dumps(render_sarif(report, package), indent=2, ensure_ascii=False)
    else:
        render_human(report, Console(sys.stdout), package)
        text = ""
    if text:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    return 0 if report.passed else 1


def render_json(report: SmokeReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False)


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _failure_lines(console: Console, failure: Failure, indent: str = "  ") -> None:
    code = f"[red bold]{failure.code}[/] " if failure.code else ""
    console.print(f"{indent}{code}{escape(failure.message)}")
    for line in (failure.log_tail or "").splitlines():
        console.print(f"{indent}  | {escape(line)}")


def _static(report: SmokeReport, package: Path) -> ValidationRun | None:
    from dataclasses import replace

    if report.static is None:
        return None
    static = report.static if report.static.root else replace(report.static, root=str(package))
    return ValidationRun((static,))


def render_human(report: SmokeReport, console: Console, package: Path) -> None:
    """Static findings (if any), a table of servers, the agents' rewards, then the verdict."""
    static = _static(report, package)
    if static is not None and report.static is not None and report.static.diagnostics:
        render_static_human(static, console)
    if report.isolation:
        console.print(f"offline: {escape(report.isolation['detail'])}")
    for s in report.servers:
        mark = "[green]ready[/]" if s.ready else "[red]not ready[/]"
        reward = "" if s.first_reward is None else f"  first reward {s.first_reward:g}"
        console.print(f"{escape(s.name)} ({escape(str(s.server_type))}): {mark} "
                      f"{_secs(s.ready_s)}{reward}")
        if s.failure is not None:
            _failure_lines(console, s.failure)
    for a in report.agents:
        rewards = ", ".join(f"{r:g}" for r in a.rewards) or "none"
        note = " (minimal row: no dataset row named it)" if a.synthetic_rows else ""
        console.print(f"agent {escape(a.agent)}: rewards {rewards}{note}")
        for failure in a.failures:
            _failure_lines(console, failure)
    shown = {id(s.failure) for s in report.servers}
    if report.failure is not None and id(report.failure) not in shown:
        _failure_lines(console, report.failure, indent="")
    times = " ".join(f"{k.removesuffix('_s')}={v:.1f}s" for k, v in report.timings.items())
    verdict = "[green bold]passed:[/]" if report.passed else "[red bold]failed:[/]"
    console.print(f"{verdict} smoke ({report.stage}) {times}")


def _escape(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return value.replace(":", "%3A").replace(",", "%2C") if prop else value


def _failures(report: SmokeReport) -> list[tuple[str, Failure]]:
    """Every spin-up failure with whom it concerns (a server, an agent, else the run)."""
    failures = [(s.name, s.failure) for s in report.servers if s.failure]
    failures += [(a.agent, f) for a in report.agents for f in a.failures]
    if report.failure is not None and all(f is not report.failure for _, f in failures):
        failures.append(("smoke", report.failure))
    return failures


def render_github(report: SmokeReport, package: Path) -> str:
    """``::error`` per failed server/agent, anchored at the manifest (servers have no line)."""
    static = _static(report, package)
    if static is not None and report.static is not None and not report.static.valid:
        return render_static_github(static)
    manifest = _escape(str(package / "nemo-environment.yaml"), prop=True)
    lines = []
    for who, failure in _failures(report):
        title = _escape(f"{failure.code or 'smoke'} {who}", prop=True)
        text = failure.message + (f"\n{failure.log_tail}" if failure.log_tail else "")
        lines.append(f"::error file={manifest},title={title}::{_escape(text)}")
    return "\n".join(lines)


def render_sarif(report: SmokeReport, package: Path) -> dict[str, Any]:
    """The static run's SARIF log, plus one error result per spin-up failure at the manifest."""
    from envkit.output.sarif import sarif_log

    static = _static(report, package) or ValidationRun(())
    log = sarif_log(static)
    run = log["runs"][0]
    uri = str(package / "nemo-environment.yaml")
    for who, failure in _failures(report):
        run["results"].append({
            "ruleId": failure.code or "smoke", "level": "error",
            "message": {"text": f"{who}: {failure.message}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}}}],
            "properties": {"package": str(package), "stage": report.stage}})
    return log
