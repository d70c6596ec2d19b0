"""Every command's result, printed in the output format the user chose.

``render(result, fmt)`` is the only place a command's result reaches stdout; it returns the
exit status the result stands for (0 valid/succeeded, 1 invalid/failed). It dispatches on the
result's type (``functools.singledispatch``), and every JSON it prints is a versioned
``TypedDict`` with a JSON Schema under ``envkit schema`` (``schema_for`` names it).

Why some renderers register lazily: a result type's module is imported by the command that
made it; ``envkit validate`` in a pre-commit hook must not import the builder, the smoke
runtime or the platform client just so that their renderers exist. ``_LAZY`` holds, for each
such module, the function that registers its types, run the first time a result from that
module is rendered (the pattern of dask's ``Dispatch.register_lazy``).
"""

from __future__ import annotations

import functools
import json
import sys
from typing import TYPE_CHECKING, Any, TypeVar, cast

from envkit.check.report import ValidationRun
from envkit.output.human import Console, render_github, render_human
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

if TYPE_CHECKING:
    from collections.abc import Callable

    from envkit.output.shapes import (
        CompiledConfigDict,
        ConvertDict,
        InitDict,
        RolloutDict,
        RulesDict,
        SettingsDict,
        TrainDict,
    )
    from envkit.validators import Rule

__all__ = ["registered_types", "render", "renders", "schema_for"]

_Renderer = TypeVar("_Renderer", bound="Callable[[Any, str], int]")


@functools.singledispatch
def render(result: object, fmt: str) -> int:
    """Print ``result`` on stdout in ``fmt``; return the exit status it stands for.

    :raises TypeError: no renderer is registered for the result's type (a bug).
    """
    if _register_lazily(type(result)):
        return render(result, fmt)
    msg = f"no renderer for {type(result).__module__}.{type(result).__qualname__}"
    raise TypeError(msg)


_SCHEMAS: dict[type, str] = {}
_LAZY: dict[str, Callable[[], None]] = {}


def renders(cls: type, schema: str | None) -> Callable[[_Renderer], _Renderer]:
    """Register the decorated function as ``render`` for ``cls``, whose JSON follows
    ``schema`` (``None``: it prints no JSON of its own)."""

    def register(func: _Renderer) -> _Renderer:
        render.register(cls, func)
        if schema is not None:
            _SCHEMAS[cls] = schema
        return func

    return register


def schema_for(cls: type) -> str | None:
    """The schema (``envkit schema NAME``) the JSON output of a ``cls`` result follows."""
    _register_lazily(cls)
    return next((_SCHEMAS[c] for c in cls.__mro__ if c in _SCHEMAS), None)


def registered_types() -> list[type]:
    """Every result type ``render`` knows, the lazily registered ones included (imports them:
    for tests and tools, not for a command)."""
    for module in list(_LAZY):
        _LAZY.pop(module)()
    return [cls for cls in render.registry if cls is not object]


def _lazy(module: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def later(registrar: Callable[[], None]) -> Callable[[], None]:
        _LAZY[module] = registrar
        return registrar

    return later


def _register_lazily(cls: type) -> bool:
    """Run the registrars of ``cls``'s modules (its own and its bases'); True if any ran."""
    ran = False
    for klass in cls.__mro__:
        registrar = _LAZY.pop(klass.__module__, None)
        if registrar is not None:
            registrar()
            ran = True
    return ran


@renders(ValidationRun, "diagnostics")
def _validation(run: ValidationRun, fmt: str) -> int:
    if fmt == "json":
        echo(dump(run.to_dict()))
    elif fmt == "github":
        echo(render_github(run))
    elif fmt == "sarif":
        from envkit.output.sarif import sarif_log

        echo(dump(sarif_log(run)))
    else:
        render_human(run, Console(sys.stdout))
    return run.exit_code


@_lazy("envkit.builder.build")
def _register_build() -> None:
    from envkit.builder.build import BuildResult

    @renders(BuildResult, "diagnostics")
    def _build(result: BuildResult, fmt: str) -> int:
        return _validation(ValidationRun((result.report,)), fmt)


@_lazy("envkit.smoke.report")
def _register_smoke() -> None:
    from envkit.output.smoke import render_smoke
    from envkit.smoke.report import SmokeOutcome

    renders(SmokeOutcome, "smoke")(render_smoke)


@_lazy("envkit.probe.report")
def _register_probe() -> None:
    from envkit.output.probe import render_probe
    from envkit.probe.report import ProbeOutcome

    renders(ProbeOutcome, "probe")(render_probe)


@_lazy("envkit.platform.outcomes")
def _register_platform() -> None:
    from envkit.output import platform

    platform.register(renders)


@renders(ConvertOutcome, "convert")
def _convert(outcome: ConvertOutcome, fmt: str) -> int:
    run = ValidationRun((outcome.report,))
    if fmt != "json":
        return _validation(run, fmt)
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
    """JSON: the report object (the input of another tool); for people, the compiled NeMo-RL
    config as commented YAML."""
    if fmt == "json":
        echo(dump(cast("CompiledConfigDict", result.report)))
    else:
        from envkit.output.compiled import compiled_config_text

        echo(compiled_config_text(result.report))
    return 0


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


@_lazy("envkit.init.project")
def _register_init() -> None:
    from envkit.init.project import InitResult

    @renders(InitResult, "init")
    def _init(result: InitResult, fmt: str) -> int:
        """``envkit init``: the files written and what to run next."""
        if fmt == "json":
            shape: InitDict = {
                "version": "1.0", "directory": str(result.directory),
                "template": result.template, "name": result.name, "format": result.format,
                "arch": result.arch, "files": list(result.files),
                "next_steps": list(result.next_steps)}
            echo(dump(shape))
            return 0
        lines = [f"Created {result.directory} ({result.template} template, {result.format} "
                 f"for {result.arch}): {len(result.files)} files",
                 *(f"  {f}" for f in result.files), "", "Next:",
                 *(f"  {step}" for step in result.next_steps)]
        echo("\n".join(lines))
        return 0
