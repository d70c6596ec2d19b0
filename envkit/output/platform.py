"""``envkit submit`` and ``envkit job ...`` results for people; their JSON is the outcome's own.
Imported the first time such a result is rendered: only the platform commands import
``envkit.platform``."""

from __future__ import annotations

import sys
from typing import Any

from envkit.output.failure import render_error
from envkit.output.render import renders
from envkit.output.stdout import dump, echo
from envkit.platform.errors import PlatformError
from envkit.platform.outcomes import JobLogs, JobMetrics, JobReply, JobShow, SubmitOutcome
from envkit.platform.progress import status_line

__all__: list[str] = []


@renders(SubmitOutcome, "submit")
def _submit(outcome: SubmitOutcome, fmt: str) -> int:
    if fmt == "json":
        echo(dump(outcome.to_json()))
        return outcome.exit_code
    verb = "created" if outcome.created else "attached to"
    lines = [f"{verb} job {outcome.ref.workspace}/{outcome.ref.name}",
             f"environment {outcome.environment.ref}", f"dataset {outcome.dataset.ref}"]
    if outcome.final_status is not None:
        lines.append(status_line(outcome.final_status))
    echo("\n".join(lines + [f"wrote {p}" for p in outcome.written]))
    return outcome.exit_code


@renders(JobReply, "job-output")
def _job_reply(outcome: JobReply, fmt: str) -> int:
    if fmt == "json":
        echo(dump(outcome.to_json()))
        return outcome.exit_code
    echo(f"{outcome.ref.name}: {status_line(outcome.reply)}")
    return outcome.exit_code


@renders(JobShow, "job-output")
def _job_show(outcome: JobShow, fmt: str) -> int:
    if fmt == "json":
        echo(dump(outcome.to_json()))
        return 0
    spec = outcome.job.get("spec") or {}
    lines = [f"{outcome.ref.workspace}/{outcome.ref.name}: {status_line(outcome.job)}",
             *(f"{key:<12}{spec[key]}" for key in ("model", "environment", "dataset")
               if spec.get(key))]
    lines += _provenance_lines(outcome.provenance)
    echo("\n".join(lines))
    return 0


def _provenance_lines(record: dict[str, Any] | None) -> list[str]:
    if record is None:
        return ["provenance  none (the job was not submitted by `envkit submit`)"]
    pkg, lock = record.get("package") or {}, record.get("lock") or {}
    closure = record.get("closure") or {}
    rows = [("package", f"{pkg.get('name')} ({pkg.get('format')}) sha256 {pkg.get('sha256')}"),
            ("wheels.lock", f"sha256 {lock.get('sha256')} target {lock.get('target')}"
             if lock else "none"),
            ("closure", ", ".join(f"{k} {v or '-'}" for k, v in closure.items())),
            ("dataset", f"sha256 {(record.get('dataset') or {}).get('sha256', '-')}"),
            ("job file", f"sha256 {(record.get('job') or {}).get('sha256', '-')}"),
            ("envkit", str(record.get("envkit_version")))]
    return ["provenance", *(f"  {k:<12}{v}" for k, v in rows)]


@renders(JobMetrics, "job-output")
def _job_metrics(outcome: JobMetrics, fmt: str) -> int:
    if fmt == "json":
        echo(dump(outcome.to_json()))
        return 0
    from rich.console import Console as RichConsole
    from rich.table import Table

    records = outcome.records
    names = sorted({k for r in records for k in r} - {"step"})
    table = Table("step", *names)
    for r in records:
        table.add_row(str(r["step"]), *(f"{r[n]:.4g}" if n in r else "" for n in names))
    RichConsole(file=sys.stdout).print(table)
    return 0


@renders(JobLogs, "job-output")
def _job_logs(outcome: JobLogs, fmt: str) -> int:
    """Lines as they come (``--follow``); a failure mid-way is an error after what was shown."""
    collected: list[dict[str, Any]] = []
    try:
        for item in outcome.lines:
            if fmt == "json":
                collected.append(item)
            else:
                echo(f"{item.get('timestamp', '')} {item.get('job_step', '')}: "
                     f"{item.get('message', '')}")
    except PlatformError as exc:
        render_error(exc, type(exc).kind, fmt)
        return exc.exit_code
    if fmt == "json":
        echo(dump(outcome.to_json(collected)))
    return 0
