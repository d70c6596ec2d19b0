"""The EK5xx checks of the prompt dataset's rows.

Row shapes are checked inside the training container, not at submit (the "GRPO and Reward
Environments" guide, "Prompt dataset format"), so a malformed row costs a whole job start.
Repeated findings are capped per code per file: a broken 1M-row file prints a screenful.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from envkit.model.diagnostics import Diagnostic, Severity
from envkit.validators._base import did_you_mean, json_kind
from envkit.validators.dataset._responses import CREATE_PARAMS_FIELDS, input_problems
from envkit.validators.dataset.context import AGENT_TYPE, RowContext, row_context
from envkit.validators.dataset.rules import (
    EK500,
    EK501,
    EK502,
    EK503,
    EK504,
    EK505,
    EK506,
    EK507,
    RULES,
)

if TYPE_CHECKING:
    from envkit.model.dataset import Dataset, Row
    from envkit.validators._base import Inputs, Rule
    from envkit.validators.dataset.leaks import LeakTally

__all__ = ["CHECKS", "MAX_PER_CODE", "ROW_CHECKS", "check_dataset_files", "check_dataset_rows"]

MAX_PER_CODE = 20
"""Diagnostics shown per code per file; the rest are counted in one summary line."""

_BY_CODE = {rule.code: rule for rule in RULES}


def check_dataset_files(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK500: ``training.jsonl`` must exist and be a readable regular file."""
    dataset = inputs.dataset
    if dataset is None:
        return
    problems = dict(dataset.read_errors)
    if "training.jsonl" not in dataset.files:
        why = problems.get("training.jsonl", "missing")
        yield EK500.at("training.jsonl", f"`training.jsonl` is {why} in the dataset directory")
    if "validation.jsonl" in problems:
        yield EK500.at(
            "validation.jsonl",
            f"`validation.jsonl` cannot be read: {problems['validation.jsonl']}",
            hint="Make `validation.jsonl` a readable regular file, or remove it (it is optional).",
        )


def check_dataset_rows(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK501–EK507: stream each file once through ``ROW_CHECKS``, capping repeats."""
    dataset = inputs.dataset
    if dataset is None:
        return
    for name in dataset.files:
        context = row_context(name, inputs.package, inputs.options.leak_min_chars)
        yield from _capped(_file_diagnostics(dataset, name, context), name)
        yield from _leak_finding(name, context.leaks)


def _leak_finding(file: str, tally: LeakTally) -> Iterator[Diagnostic]:
    """EK507: one finding for the file, with the share of rows and the first row numbers."""
    if not tally.leaked:
        return
    share = tally.leaked / tally.checked
    lines = ", ".join(str(n) for n in tally.lines)
    more = f" (first {len(tally.lines)} shown)" if tally.leaked > len(tally.lines) else ""
    fields = ", ".join(f"`{f}`" for f in sorted(tally.fields, key=tally.fields.__getitem__,
                                                   reverse=True))
    yield EK507.at(
        file,
        f"{tally.leaked:,} of {tally.checked:,} rows ({share:.0%}) hold their reference answer "
        f"({fields}) in the prompt: line{'s' if len(tally.lines) > 1 else ''} {lines}{more} "
        f"(rows whose reference has at least {tally.min_chars} characters counted)",
        line=tally.lines[0],
    )


def _file_diagnostics(dataset: Dataset, name: str, context: RowContext) -> Iterator[Diagnostic]:
    for row in dataset.iter_rows(name):
        if row.error is not None:
            yield _at(EK501, row, f"line {row.line} is not a JSON object: {row.error}")
        elif not isinstance(row.data, dict):
            yield _at(EK501, row, f"line {row.line} is {json_kind(row.data)}, not a JSON object")
        else:
            for check in ROW_CHECKS:
                yield from check(row, row.data, context)


def _capped(found: Iterable[Diagnostic], file: str) -> Iterator[Diagnostic]:
    """Pass the first ``MAX_PER_CODE`` diagnostics per code, then one summary line per code."""
    shown: Counter[str] = Counter()
    hidden: Counter[str] = Counter()
    severity: dict[str, Severity] = {}
    for diag in found:
        if shown[diag.code] < MAX_PER_CODE:
            shown[diag.code] += 1
            yield diag
        else:
            hidden[diag.code] += 1
            if severity.get(diag.code) is not Severity.ERROR:
                severity[diag.code] = diag.severity
    for code, count in sorted(hidden.items()):
        message = (f"... and {count:,} more {code} finding(s) in `{file}` "
                   f"(first {MAX_PER_CODE} shown)")
        yield _BY_CODE[code].at(file, message, severity=severity[code])


def _at(rule: Rule, row: Row, message: str, *, hint: str | None = None,
        severity: Severity | None = None) -> Diagnostic:
    """``rule`` at ``row``'s line and column."""
    return rule.at(row.file, message, line=row.line, column=row.column, hint=hint,
                   severity=severity)


def _check_prompt(row: Row, data: Mapping[str, Any], context: RowContext) -> Iterator[Diagnostic]:
    """EK502: ``responses_create_params.input`` in a shape Gym's request model accepts."""
    params = data.get("responses_create_params")
    if not isinstance(params, dict):
        shown = "missing" if params is None else "not an object"
        key = next((k for k in ("messages", "prompt") if k in data), None)
        hint = (f"Move `{key}` to `responses_create_params.input` (GRPO rows are Gym rollout "
                "rows)." if key else None)
        yield _at(EK502, row, f"`responses_create_params` is {shown}", hint=hint)
        return
    if "input" not in params:
        yield _at(EK502, row, "`responses_create_params.input` is missing")
    for key in sorted(set(params) - CREATE_PARAMS_FIELDS, key=str):
        hint = did_you_mean(str(key), CREATE_PARAMS_FIELDS) or (
            "Move extra data to the top level of the row; it is forwarded to the environment.")
        yield _at(EK502, row, f"`responses_create_params.{key}` is not a Responses API field "
                  "(Gym forbids extra keys)", hint=hint)
    if "input" in params:
        for where, problem in input_problems(params["input"]):
            yield _at(EK502, row, f"`responses_create_params.{where}` {problem}")


def _check_agent_ref(row: Row, data: Mapping[str, Any],
                     context: RowContext) -> Iterator[Diagnostic]:
    """EK503 (shape) and EK504 (names an agent instance of the package)."""
    ref = data.get("agent_ref")
    if not isinstance(ref, dict):
        yield _at(EK503, row, f"`agent_ref` is {'missing' if ref is None else 'not an object'}")
        return
    name = ref.get("name")
    if not isinstance(name, str) or not name:
        yield _at(EK503, row, "`agent_ref.name` must be a non-empty string")
    ref_type = ref.get("type")
    if ref_type is None:
        yield _at(EK503, row, "`agent_ref.type` is missing (Gym tolerates it; the platform's "
                  "rows carry it)", severity=Severity.WARNING)
    elif ref_type != AGENT_TYPE:
        yield _at(EK503, row, f"`agent_ref.type` is {ref_type!r}, not {AGENT_TYPE!r}")
    if isinstance(name, str) and name and context.agents is not None and name not in context.agents:
        yield _unknown_agent(row, name, context)


def _unknown_agent(row: Row, name: str, context: RowContext) -> Diagnostic:
    agents = context.agents or frozenset()
    other = context.instance_types.get(name)
    what = f"a `{other}` instance, not an agent" if other else "not defined in the package"
    hint = did_you_mean(name, agents)
    if not other and name in context.agent_impls:
        instance = context.agent_impls[name]
        what = f"the implementation of agent instance {instance!r}; rows name the instance"
        hint = f'Use `"name": "{instance}"` (the top-level key, not the directory).'
    if hint is None:
        listed = ", ".join(f"`{a}`" for a in sorted(agents)) or "(none)"
        hint = f"Agent instances in the package: {listed}."
    return _at(EK504, row, f"`agent_ref.name` {name!r} is {what}", hint=hint)


def _check_vf_env_id(row: Row, data: Mapping[str, Any],
                     context: RowContext) -> Iterator[Diagnostic]:
    """EK505: verifiers rows name the manifest's environment."""
    if not (context.adapter or "vf_env_id" in data):
        return
    value = data.get("vf_env_id")
    expected = context.vf_env_id
    if value is None:
        fallback = _agent_fallback(data, context)
        if fallback is not None and fallback == expected:
            yield _at(EK505, row, f"`vf_env_id` is missing; the agent config's {fallback!r} is "
                      "used", severity=Severity.WARNING)
        else:
            yield _at(EK505, row, "`vf_env_id` is missing on a verifiers row")
    elif not isinstance(value, str) or not value:
        yield _at(EK505, row, "`vf_env_id` must be a non-empty string")
    elif expected is not None and value != expected:
        yield _at(EK505, row, f"`vf_env_id` is {value!r}; the manifest's `metadata.vf_env_id` "
                  f"is {expected!r}")


def _agent_fallback(data: Mapping[str, Any], context: RowContext) -> str | None:
    ref = data.get("agent_ref")
    name = ref.get("name") if isinstance(ref, Mapping) else None
    return context.agent_vf_env_ids.get(name) if isinstance(name, str) else None


def _check_leak(row: Row, data: Mapping[str, Any], context: RowContext) -> Iterator[Diagnostic]:
    """EK507: counted per row, reported once per file (``_leak_finding``)."""
    context.leaks.add(row.line, data)
    return iter(())


def _check_task_idx(row: Row, data: Mapping[str, Any], context: RowContext) -> Iterator[Diagnostic]:
    """EK506: verifiers rows carry a unique integer ``task_idx`` (unique in training.jsonl)."""
    if not (context.adapter or "vf_env_id" in data):
        return
    value = data.get("task_idx")
    if value is None:
        yield _at(EK506, row, "`task_idx` is missing on a verifiers row")
    elif isinstance(value, bool) or not isinstance(value, int):
        yield _at(EK506, row, f"`task_idx` is {value!r}, not an integer")
    elif context.file == "training.jsonl" and not context.seen_task_idx.add(value):
        yield _at(EK506, row, f"`task_idx` {value} appears on an earlier row too")


RowCheck = Callable[["Row", Mapping[str, Any], RowContext], Iterator[Diagnostic]]

ROW_CHECKS: tuple[RowCheck, ...] = (
    _check_prompt,
    _check_agent_ref,
    _check_vf_env_id,
    _check_task_idx,
    _check_leak,
)
"""Per-row checks (EK502–EK507), applied in one streaming pass; EK501 gates them."""

CHECKS = (check_dataset_files, check_dataset_rows)
