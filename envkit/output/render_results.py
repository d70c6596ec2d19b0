"""The renderers of ``envkit.output.results``' outcomes, imported the first time one is
rendered: ``envkit validate`` never builds one, so it never imports them."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, cast

import yaml

from envkit.output.render import render_run, renders
from envkit.output.results import (
    CompiledConfig,
    ConvertOutcome,
    RolloutOutcome,
    RuleDocs,
    SchemaText,
    SettingsView,
    TrainOutcome,
)
from envkit.output.stdout import dump, echo
from envkit.validate.report import ValidationRun

if TYPE_CHECKING:
    from collections.abc import Mapping

    from envkit.output.shapes import (
        CompiledConfigDict,
        ConvertDict,
        RolloutDict,
        RulesDict,
        SettingsDict,
        TrainDict,
    )
    from envkit.validators import Rule

__all__: list[str] = []


@renders(ConvertOutcome, "convert")
def _convert(outcome: ConvertOutcome, fmt: str) -> int:
    run = ValidationRun((outcome.report,))
    if fmt != "json":
        return render_run(run, fmt)
    result = outcome.result
    data: ConvertDict = {
        **run.to_dict(),
        "package": str(result.package) if result else None,
        "dataset": str(result.dataset) if result else None,
        "training_rows": result.training_rows if result else 0,
        "validation_rows": result.validation_rows if result else 0,
        "wheels": len(result.wheels) if result else 0,
    }
    echo(dump(data))
    return run.exit_code


@renders(RolloutOutcome, "rollout")
def _rollout(outcome: RolloutOutcome, fmt: str) -> int:
    summary, output = outcome.summary, outcome.output
    if fmt == "json":
        data = cast("RolloutDict", {**summary.to_json(), "output": str(output) if output else None})
        echo(dump(data))
        return summary.exit_code
    lines = [f"{agent}\tmean_reward={mean:.4f}" for agent, mean in summary.mean_reward.items()]
    if summary.aborted:
        lines.append(f"aborted: {summary.aborted}")
    lines.append(f"rollouts={len(summary.results)} failed={len(summary.failed)} "
                 f"ready_s={summary.ready_s:.1f} rollout_s={summary.rollout_s:.1f}"
                 + (f" output={output}" if output else ""))
    echo("\n".join(lines))
    return summary.exit_code


@renders(TrainOutcome, "train")
def _train(outcome: TrainOutcome, fmt: str) -> int:
    result = outcome.result
    if fmt == "json":
        data: TrainDict = {"version": "1.0", "steps": result.steps,
                           "final_dir": str(result.final_dir),
                           "metrics": str(result.metrics_path),
                           "final_metrics": dict(result.final_metrics)}
        echo(json.dumps(data))
    else:
        reward = result.final_metrics.get("train_reward")
        echo(f"trained {result.steps} steps; train_reward={reward}; model: {result.final_dir}")
    return 0


@renders(CompiledConfig, "train-config")
def _compiled_config(result: CompiledConfig, fmt: str) -> int:
    if fmt == "json":
        echo(dump(cast("CompiledConfigDict", result.report)))
    else:
        echo(_compiled_text(result.report))
    return 0


def _compiled_text(report: Mapping[str, Any]) -> str:
    """The report as commented YAML: a header, the config, then what cannot apply here. YAML
    because NeMo-RL's own configs are YAML, so a reader compares it against a recipe; the
    comments keep the text loadable as a config.

    >>> text = _compiled_text({"train_rows": 2, "validation_rows": 0,
    ...     "config": {"grpo": {"seed": 42}}, "cannot_apply_here": [{"key": "env", "here": "x"}]})
    >>> print(text)
    # NeMo-RL config this job compiles to (sized by 2 training rows, 0 validation rows)
    grpo:
      seed: 42
    <BLANKLINE>
    # Cannot apply on this machine (what envkit train does instead):
    #   env: x
    """
    head = (
        f"# NeMo-RL config this job compiles to (sized by {report['train_rows']} training "
        f"rows, {report['validation_rows']} validation rows)"
    )
    body = yaml.safe_dump(dict(report["config"]), sort_keys=False, default_flow_style=False)
    notes = [f"#   {note['key']}: {note['here']}" for note in report["cannot_apply_here"]]
    tail = ["# Cannot apply on this machine (what envkit train does instead):", *notes]
    return "\n".join([head, body.rstrip("\n"), "", *tail])


@renders(SchemaText, None)
def _schema(result: SchemaText, fmt: str) -> int:
    sys.stdout.write(result.text)
    return 0


def _severities(rule: Rule) -> str:
    """``Severity: error`` or, for a rule whose severity depends on the input, when each
    applies (one line each, as ruff's rule pages list conditions)."""
    if not rule.when:
        return f"Severity: {rule.severity.value}"
    return "Severity:\n" + "\n".join(f"- {severity.value} {when}" for severity, when in rule.when)


@renders(RuleDocs, "rules")
def _rules(docs: RuleDocs, fmt: str) -> int:
    if fmt == "json":
        data: RulesDict = {"version": "1.1", "rules": [
            {"code": r.code, "severity": r.severity.value,
             "severities": [{"severity": s.value, "when": when} for s, when in r.severities],
             "title": r.title, "why": r.why, "fix": r.fix} for r in docs.rules]}
        echo(dump(data))
    elif docs.detail:
        (rule,) = docs.rules
        echo(f"# {rule.title} ({rule.code})\n\n{_severities(rule)}\n\n"
             f"## Why is this bad?\n{rule.why}\n\n## How to fix\n{rule.fix}")
    else:
        echo("\n".join(f"{r.code}  {'/'.join(s.value for s, _ in r.severities):<13}  {r.title}"
                       for r in docs.rules))
    return 0


@renders(SettingsView, "settings")
def _settings(view: SettingsView, fmt: str) -> int:
    if fmt == "json":
        data: SettingsDict = {"version": "1.0", "packages": [
            {"path": path, "settings": dict(values)} for path, values in view.packages]}
        echo(dump(data))
        return 0
    out = []
    for path, values in view.packages:
        out.append(f"# {path}")
        out += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
        out.append("")
    echo("\n".join(out).rstrip("\n"))
    return 0
