"""Render a probe outcome for people (tables), for machines (JSON), as GitHub annotations and
as SARIF (the findings are ordinary diagnostics: ``render_run``'s over ``ProbeReport.findings``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from envkit.model.diagnostics import Severity
from envkit.output.human import Console, dash, diagnostic_path, escape
from envkit.output.render import render_run, renders
from envkit.output.stdout import dump, echo
from envkit.probe.report import ProbeOutcome
from envkit.validate.report import ValidationRun

if TYPE_CHECKING:
    from envkit.probe.report import ProbeDict, ProbeReport
    from envkit.validate.report import Report

__all__ = ["render_human", "render_probe"]


@renders(ProbeOutcome, "probe")
def render_probe(outcome: ProbeOutcome, fmt: str) -> int:
    """Print ``outcome`` in ``fmt`` on stdout; 0 when the probe passed, else 1."""
    report = outcome.report
    if fmt in ("github", "sarif"):
        render_run(ValidationRun((report.findings(),)), fmt)
    elif fmt == "json":
        echo(dump(report.to_dict()))
    else:
        render_human(report, Console(sys.stdout))
    return 0 if report.passed else 1


def _rewards(data: ProbeDict, console: Console) -> None:
    agents = data["agents"]
    if not agents:
        return
    names = list(dict.fromkeys(p["policy"] for a in agents for p in a["policies"]))
    console.print("[bold]mean reward per policy[/] (* the oracle; failed rollouts not scored)")
    console.print(f"  {'policy':<24}" + "".join(f"{a['agent'][:22]:>24}" for a in agents))
    for name in names:
        cells = []
        for a in agents:
            p = next((p for p in a["policies"] if p["policy"] == name), None)
            mark = "*" if a["oracle"] == name else " "
            cell = "-" if p is None else dash(p["mean"], ".2f") + mark + (
                f" ({p['failed']} failed)" if p["failed"] else "")
            cells.append(f"{cell:>24}")
        console.print(f"  {escape(name):<24}" + "".join(cells))


def _signal(data: ProbeDict, console: Console) -> None:
    for a in data["agents"]:
        pairs = sum(len(p["per_row"]) for p in a["policies"])
        share = a["dead_share"]
        console.print(f"{escape(a['agent'])}: determinism {len(a['unstable'])} of {pairs} "
                      f"reply-row pairs disagree; dead rows {len(a['dead_rows'])} of "
                      f"{len(a['judged_rows'])}" + (f" ({share:.0%})" if share is not None
                                                     else ""))


def _reasoning(data: ProbeDict, console: Console) -> None:
    section = data["reasoning"]
    for a in (section or {}).get("agents", []):
        shape = a["shape"] or "not seen"
        cells = ", ".join(f"{escape(p['policy'].removeprefix('reasoning:'))} "
                          f"{dash(p['mean'], '.2f')}" for p in a["policies"])
        console.print(f"[bold]reasoning[/] {escape(a['agent'])} (as {shape}; oracle "
                      f"{dash(a['oracle_mean'], '.2f')}): {cells}")


def _load(data: ProbeDict, console: Console) -> None:
    load = data["load"]
    if not load:
        return
    console.print(f"[bold]load[/] (oracle rollouts; the job sends {load['concurrency']} at once)")
    console.print(f"  {'in flight':>9} {'sent':>5} {'ok':>5} {'failed':>6} {'rollouts/s':>10} "
                  f"{'p50':>7} {'p95':>7} {'p99':>7}")
    for lv in load["levels"]:
        style = "red" if lv["failed"] else ""
        row = (f"  {lv['concurrency']:>9} {lv['requests']:>5} {lv['ok']:>5} {lv['failed']:>6} "
               f"{dash(lv['throughput_rps'], '.1f'):>10} {dash(lv['p50_s'], '.3f'):>7} "
               f"{dash(lv['p95_s'], '.3f'):>7} {dash(lv['p99_s'], '.3f'):>7}")
        console.print(f"[{style}]{row}[/]" if style else row)
    step = load["projected_step_s"]
    step_text = "-" if step is None else f"{step:.1f}s"
    console.print(f"  knee {load['knee'] or '-'}; environment time per step {step_text} "
                  f"({load['rollouts_per_step']} rollouts)")


def _fixtures(data: ProbeDict, console: Console) -> None:
    section = data["phases"].get("fixtures") or {}
    for server in section.get("servers", []):
        verdict = "passed" if server["passed"] else "[red]failed[/]"
        console.print(f"[bold]Gym verifier fixture[/] {escape(server['server'])}: {verdict}"
                      + (f" ({escape(server['fixture_path'])})" if server["fixture_path"] else ""))
        for case in server["cases"]:
            mark = {True: "ok", False: "[red]FAIL[/]", None: "skip"}[case["passed"]]
            want = (f"error ~ {case['expected_error']!r}" if case["kind"] == "malformed"
                    else dash(case["expected_reward"], ".3g"))
            seen = ", ".join(dash(r, ".3g") for r in case["observed"]) or "-"
            console.print(f"  {mark:>4} {escape(case['name'])[:32]:<32} {case['kind']:<12} "
                          f"expected {escape(want)}, observed {seen}")


def _model_signal(data: ProbeDict, console: Console) -> None:
    signal = data["signal"]
    if not signal:
        return
    console.print(f"[bold]learning signal[/] (the policy {escape(signal['model'])}, "
                  f"G={signal['group_size']} replies per prompt, {signal['backend']})")
    console.print(f"  {'agent':<28} {'groups':>6} {'zero-variance (95%)':>22} "
                  f"{'no gradient':>11} {'mean reward':>11} {'failed':>6}")
    for a in [*signal["agents"], {**signal["total"], "agent": "all", "failed": None,
                                  "mean_reward": None}]:
        lo_hi = a["zero_variance_interval"]
        zv = dash(a["zero_variance_share"], ".0%") + (
            f" ({lo_hi[0]:.0%}..{lo_hi[1]:.0%})" if lo_hi else "")
        failed = "" if a["failed"] is None else str(a["failed"])
        console.print(f"  {escape(a['agent'][:28]):<28} {a['groups']:>6} {zv:>22} "
                      f"{dash(a['no_gradient_share'], '.0%'):>11} "
                      f"{dash(a['mean_reward'], '.3f'):>11} {failed:>6}")
    dynamic = signal["dynamic_sampling"]
    if dynamic:
        batches = dynamic["expected_gen_batches"]
        need = "never fills a step" if batches is None else f"about {batches} per step"
        console.print(f"  dynamic sampling: generation batches of {dynamic['prompts_per_batch']} "
                      f"prompts: {need} (the job allows {dynamic['max_gen_batches'] + 1})")


def _diagnostics(findings: Report, console: Console) -> None:
    for d in findings.diagnostics:
        style = "red" if d.severity is Severity.ERROR else "yellow"
        where = diagnostic_path(findings, d) + (f":{d.line}" if d.line else "")
        console.print(f"[bold]{escape(where)}:[/] [{style} bold]{d.code}[/] {escape(d.message)}")
        console.print(f"  [cyan]= help:[/] {escape(d.hint)}")


def render_human(report: ProbeReport, console: Console) -> None:
    """The tables (rewards, determinism and dead rows, load, the policy's learning signal),
    the findings, the verdict."""
    data = report.to_dict()
    if report.isolation:
        console.print(f"offline: {escape(report.isolation.get('detail', ''))}")
    _rewards(data, console)
    _signal(data, console)
    _reasoning(data, console)
    _load(data, console)
    _model_signal(data, console)
    _fixtures(data, console)
    _diagnostics(report.findings(), console)
    for line in report.log_tail.splitlines():
        console.print(f"  | {escape(line)}")
    for note in report.notes:
        console.print(f"[yellow bold]note:[/] {escape(note)}")
    if report.png:
        console.print(f"wrote {escape(report.png)}")
    times = " ".join(f"{k.removesuffix('_s')}={v:.1f}s" for k, v in report.timings.items())
    verdict = "[green bold]passed:[/]" if report.passed else "[red bold]failed:[/]"
    console.print(f"{verdict} probe ({report.stage}) {times}")
