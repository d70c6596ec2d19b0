"""Render a smoke outcome for people, for machines (JSON), as GitHub annotations and as SARIF.

Every diagnostic goes through ``envkit validate``'s own renderers (``SmokeReport.as_report``);
smoke adds the servers and agents, and each finding's log tail.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from envkit.output.human import Console, escape, render_github, render_human
from envkit.output.render import renders
from envkit.output.sarif import sarif_log
from envkit.output.stdout import dump, echo
from envkit.smoke.report import SmokeOutcome
from envkit.validate.report import ValidationRun

if TYPE_CHECKING:
    from envkit.smoke.report import SmokeFinding, SmokeReport

__all__ = ["render_github_smoke", "render_human_smoke", "render_sarif", "render_smoke"]


@renders(SmokeOutcome, "smoke")
def render_smoke(outcome: SmokeOutcome, fmt: str) -> int:
    """Print ``outcome`` in ``fmt`` on stdout; 0 when the smoke passed, else 1."""
    report = outcome.report
    if fmt == "json":
        echo(dump(report.to_dict()))
    elif fmt == "github":
        echo(render_github_smoke(report))
    elif fmt == "sarif":
        echo(dump(render_sarif(report)))
    else:
        render_human_smoke(report, Console(sys.stdout))
    return 0 if report.passed else 1


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _evidence(console: Console, finding: SmokeFinding) -> None:
    if not finding.log_tail:
        return
    who = f"`{finding.subject}`" if finding.subject else "the run"
    console.print(f"[dim]{finding.code}: log tail of {escape(who)}:[/]")
    for line in finding.log_tail.splitlines():
        console.print(f"  | {escape(line)}")


def render_human_smoke(report: SmokeReport, console: Console) -> None:
    """The servers and agents, each finding's log tail, then every diagnostic as validate
    prints it, then the verdict."""
    if report.isolation:
        console.print(f"offline: {escape(report.isolation['detail'])}")
    for s in report.servers:
        mark = "[green]ready[/]" if s.ready else "[red]not ready[/]"
        reward = "" if s.first_reward is None else f"  first reward {s.first_reward:g}"
        console.print(f"{escape(s.name)} ({escape(str(s.server_type))}): {mark} "
                      f"{_secs(s.ready_s)}{reward}")
    for a in report.agents:
        rewards = ", ".join(f"{r:g}" for r in a.rewards) or "none"
        note = " (minimal row: no dataset row named it)" if a.synthetic_rows else ""
        console.print(f"agent {escape(a.agent)}: rewards {rewards}{note}")
    for finding in report.findings:
        _evidence(console, finding)
    combined = report.as_report()
    if combined.diagnostics or combined.notes:
        render_human(ValidationRun((combined,)), console)
    times = " ".join(f"{k.removesuffix('_s')}={v:.1f}s" for k, v in report.timings.items())
    verdict = "[green bold]passed:[/]" if report.passed else "[red bold]failed:[/]"
    console.print(f"{verdict} smoke ({report.stage}) {times}")


def render_github_smoke(report: SmokeReport) -> str:
    """Validate's annotations for every diagnostic, then each log tail as a collapsed group."""
    lines = [render_github(ValidationRun((report.as_report(),)))]
    for finding in report.findings:
        if finding.log_tail:
            who = finding.subject or "smoke"
            lines += [f"::group::{finding.code} log tail of {who}", finding.log_tail,
                      "::endgroup::"]
    return "\n".join(line for line in lines if line)


def render_sarif(report: SmokeReport) -> dict[str, Any]:
    """Validate's SARIF log over every diagnostic; a spin-up result also carries whom it
    concerns, the stage and the log tail in its ``properties``."""
    log = sarif_log(ValidationRun((report.as_report(),)))
    results = log["runs"][0]["results"]
    findings = report.findings
    for result, finding in zip(results[len(results) - len(findings):], findings, strict=True):
        result["properties"].update({"subject": finding.subject, "stage": report.stage,
                                     "log_tail": finding.log_tail})
    return log
