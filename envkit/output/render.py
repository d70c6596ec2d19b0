"""Every command's result and every error, printed in the output format the user chose.

``render(result, fmt)`` is the only place a command's result reaches stdout; it returns the
exit status the result stands for (0 valid/succeeded, 1 invalid/failed). Every JSON it prints
has a ``version`` and a JSON Schema under ``envkit schema`` (``JSON_SCHEMAS`` says which).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from envkit.output.human import Console, render_github, render_human

if TYPE_CHECKING:
    from envkit.check.report import Report, ValidationRun
    from envkit.output.results import (
        CompiledConfig,
        ConvertOutcome,
        RolloutOutcome,
        RuleDocs,
        SchemaText,
        SettingsView,
        TrainOutcome,
    )
    from envkit.platform.outcomes import JobLogs, JobMetrics, JobReply, SubmitOutcome

__all__ = ["JSON_SCHEMAS", "render", "render_error", "render_json"]

JSON_SCHEMAS = {
    "ValidationRun": "diagnostics",
    "BuildResult": "diagnostics",
    "ConvertOutcome": "convert",
    "RolloutOutcome": "rollout",
    "TrainOutcome": "train",
    "RuleDocs": "rules",
    "SettingsView": "settings",
    "SubmitOutcome": "submit",
    "JobReply": "job-output",
    "JobMetrics": "job-output",
    "JobLogs": "job-output",
    "SmokeOutcome": "smoke",
    "ProbeOutcome": "probe",
    "error": "error",
}
"""Result type -> the schema (``envkit schema NAME``) its JSON output follows."""

ERROR_VERSION = "1.0"


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def _echo(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()


def _stdout_console() -> Console:
    return Console(sys.stdout)


def render_json(report: Report | ValidationRun) -> str:
    return _dump(report.to_dict())


def _validation(run: ValidationRun, fmt: str) -> int:
    if fmt == "json":
        _echo(render_json(run))
    elif fmt == "github":
        _echo(render_github(run))
    elif fmt == "sarif":
        from envkit.output.sarif import sarif_log

        _echo(_dump(sarif_log(run)))
    else:
        render_human(run, _stdout_console())
    return run.exit_code


def _build(result: Any, fmt: str) -> int:
    from dataclasses import replace

    from envkit.check.report import ValidationRun

    report = result.report
    if report.root is None:
        report = replace(report, root=str(result.out),
                         dataset=str(result.dataset_dir) if result.dataset_dir else None)
    return _validation(ValidationRun((report,)), fmt)


def _convert(outcome: ConvertOutcome, fmt: str) -> int:
    from envkit.check.report import ValidationRun

    run = ValidationRun((outcome.report,))
    result = outcome.result
    if fmt != "json":
        return _validation(run, fmt)
    written = {"package": None, "dataset": None, "training_rows": 0, "validation_rows": 0,
               "wheels": 0} if result is None else {
        "package": str(result.package), "dataset": str(result.dataset),
        "training_rows": result.training_rows, "validation_rows": result.validation_rows,
        "wheels": len(result.wheels)}
    _echo(_dump({**run.to_dict(), **written}))
    return run.exit_code


def _rollout(outcome: RolloutOutcome, fmt: str) -> int:
    summary, output = outcome.summary, outcome.output
    if fmt == "json":
        _echo(_dump({**summary.to_json(), "output": str(output) if output else None}))
        return summary.exit_code
    lines = [f"{agent}\tmean_reward={mean:.4f}" for agent, mean in summary.mean_reward.items()]
    if getattr(summary, "aborted", None):
        lines.append(f"aborted: {summary.aborted}")
    lines.append(f"rollouts={len(summary.results)} failed={len(summary.failed)} "
                 f"ready_s={summary.ready_s:.1f} rollout_s={summary.rollout_s:.1f}"
                 + (f" output={output}" if output else ""))
    _echo("\n".join(lines))
    return summary.exit_code


def _train(outcome: TrainOutcome, fmt: str) -> int:
    result = outcome.result
    if fmt == "json":
        _echo(json.dumps({"version": "1.0", "steps": result.steps,
                          "final_dir": str(result.final_dir),
                          "metrics": str(result.metrics_path),
                          "final_metrics": result.final_metrics}))
    else:
        reward = result.final_metrics.get("train_reward")
        _echo(f"trained {result.steps} steps; train_reward={reward}; model: {result.final_dir}")
    return 0


def _compiled_config(result: CompiledConfig, fmt: str) -> int:
    _echo(_dump(result.report))
    return 0


def _schema(result: SchemaText, fmt: str) -> int:
    sys.stdout.write(result.text)
    return 0


def _rules(docs: RuleDocs, fmt: str) -> int:
    if fmt == "json":
        _echo(_dump({"version": "1.0", "rules": [
            {"code": r.code, "severity": r.severity.value, "title": r.title, "why": r.why,
             "fix": r.fix} for r in docs.rules]}))
    elif docs.detail:
        (rule,) = docs.rules
        _echo(f"# {rule.title} ({rule.code})\n\nSeverity: {rule.severity.value}\n\n"
              f"## Why is this bad?\n{rule.why}\n\n## How to fix\n{rule.fix}")
    else:
        _echo("\n".join(f"{r.code}  {r.severity.value:<7}  {r.title}" for r in docs.rules))
    return 0


def _settings(view: SettingsView, fmt: str) -> int:
    if fmt == "json":
        _echo(_dump({"version": "1.0", "packages": [
            {"path": path, "settings": dict(values)} for path, values in view.packages]}))
        return 0
    out = []
    for path, values in view.packages:
        out.append(f"# {path}")
        out += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
        out.append("")
    _echo("\n".join(out).rstrip("\n"))
    return 0


def _submit(outcome: SubmitOutcome, fmt: str) -> int:
    if fmt == "json":
        _echo(_dump(outcome.to_json()))
        return outcome.exit_code
    from envkit.platform.progress import status_line

    verb = "created" if outcome.created else "attached to"
    lines = [f"{verb} job {outcome.ref.workspace}/{outcome.ref.name}",
             f"environment {outcome.environment.ref}", f"dataset {outcome.dataset.ref}"]
    if outcome.final_status is not None:
        lines.append(status_line(outcome.final_status))
    _echo("\n".join(lines + [f"wrote {p}" for p in outcome.written]))
    return outcome.exit_code


def _job_reply(outcome: JobReply, fmt: str) -> int:
    if fmt == "json":
        _echo(_dump(outcome.to_json()))
        return outcome.exit_code
    from envkit.platform.progress import status_line

    _echo(f"{outcome.ref.name}: {status_line(outcome.reply)}")
    return outcome.exit_code


def _job_metrics(outcome: JobMetrics, fmt: str) -> int:
    if fmt == "json":
        _echo(_dump(outcome.to_json()))
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


def _job_logs(outcome: JobLogs, fmt: str) -> int:
    """Lines as they come (``--follow``); a failure mid-way is an error after what was shown."""
    from envkit.platform.errors import PlatformError

    collected: list[dict[str, Any]] = []
    try:
        for item in outcome.lines:
            if fmt == "json":
                collected.append(item)
            else:
                _echo(f"{item.get('timestamp', '')} {item.get('job_step', '')}: "
                      f"{item.get('message', '')}")
    except PlatformError as exc:
        render_error(exc, "failed", fmt)
        return 1
    if fmt == "json":
        _echo(_dump(outcome.to_json(collected)))
    return 0


def _smoke(outcome: Any, fmt: str) -> int:
    from envkit.output.smoke import render_smoke

    return render_smoke(outcome, fmt)


def _probe(outcome: Any, fmt: str) -> int:
    from envkit.output.probe import render_probe

    return render_probe(outcome, fmt)


_RENDERERS: dict[str, Callable[[Any, str], int]] = {
    "ValidationRun": _validation,
    "BuildResult": _build,
    "ConvertOutcome": _convert,
    "RolloutOutcome": _rollout,
    "TrainOutcome": _train,
    "SchemaText": _schema,
    "CompiledConfig": _compiled_config,
    "RuleDocs": _rules,
    "SettingsView": _settings,
    "SubmitOutcome": _submit,
    "JobReply": _job_reply,
    "JobMetrics": _job_metrics,
    "JobLogs": _job_logs,
    "SmokeOutcome": _smoke,
    "ProbeOutcome": _probe,
}


def render(result: object, fmt: str) -> int:
    """Print ``result`` on stdout in ``fmt``; return the exit status it stands for."""
    renderer = _RENDERERS.get(type(result).__name__)
    if renderer is None:
        msg = f"no renderer for {type(result).__name__}"
        raise TypeError(msg)
    return renderer(result, fmt)


def error_dict(exc: BaseException, kind: str) -> dict[str, Any]:
    """The JSON error object (``envkit schema error``)."""
    from envkit.check.report import _diag_dict

    message = str(exc.format_message()) if hasattr(exc, "format_message") else str(exc)
    data: dict[str, Any] = {
        "version": ERROR_VERSION,
        "valid": False,
        "error": {"kind": kind, "type": type(exc).__name__, "message": message,
                  "hint": str(getattr(exc, "hint", "") or ""),
                  "code": getattr(exc, "code", None) if kind != "usage" else None},
        "diagnostics": [_diag_dict(d, None) for d in getattr(exc, "diagnostics", None) or ()],
    }
    if not isinstance(data["error"]["code"], str):
        data["error"]["code"] = None
    return data


def render_error(exc: BaseException, kind: str, fmt: str, *, shown: bool = False) -> None:
    """The error on stderr (unless click ``shown`` it), and as JSON on stdout for ``json``."""
    data = error_dict(exc, kind)
    if not shown:
        _stderr_error(exc, kind, data)
    if fmt in ("json", "sarif"):
        _echo(_dump(data))


def _stderr_error(exc: BaseException, kind: str, data: dict[str, Any]) -> None:
    err = data["error"]
    if kind == "internal":
        sys.stderr.write(f"envkit: internal error: {type(exc).__name__}: {exc}\n"
                         "Please report this with the command you ran.\n")
        return
    code = f"{err['code']} " if err["code"] else ""
    sys.stderr.write(f"error: {code}{err['message']}\n")
    if err["hint"]:
        sys.stderr.write(f"  = help: {err['hint']}\n")
    for d in data["diagnostics"]:
        where = f"{d['path']}:{d['line']}" if d["line"] else d["path"]
        sys.stderr.write(f"{where}: {d['code']} {d['message']} (fix: {d['hint']})\n")
    tail = getattr(exc, "log_tail", "")
    if tail:
        sys.stderr.write(f"{tail}\n")
    sys.stderr.flush()
