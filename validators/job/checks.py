"""The EK6xx checks of the platform's ``rl`` GRPO job JSON.

Names, types, ranges and defaults come from the one job model (``envkit.model.jobspec``), which
also generates ``envkit schema job``: a job passes here exactly when the platform's job model
and its pre-compile layout check accept it.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import envkit.model.jobspec as job_model
from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.jobspec import JobSettings, JobSpecError, grpo_settings
from envkit.validators._base import did_you_mean, json_kind
from envkit.validators.job.cross_field import findings
from envkit.validators.job.rules import EK600, EK601, EK603, EK604, EK608, EK609, EK610, EK611

if TYPE_CHECKING:
    from envkit.model.jobfile import JobDoc
    from envkit.model.jobspec import GrpoSettings, Problem
    from envkit.validators._base import Inputs

__all__ = [
    "CHECKS", "REF_FIELDS", "check_job", "is_local_ref", "is_platform_ref", "is_workspace_ref",
    "job_diagnostics",
]

REF_FIELDS = ("model", "dataset", "environment")
_WORKSPACE_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_PLAIN_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def is_workspace_ref(value: object) -> bool:
    """True for a platform reference ``workspace/name``.

    >>> is_workspace_ref("default/qwen3-0.6b"), is_workspace_ref("./data"), is_workspace_ref({})
    (True, False, False)
    """
    return isinstance(value, str) and _WORKSPACE_REF.fullmatch(value) is not None


def is_platform_ref(value: object) -> bool:
    """``workspace/name`` or a bare ``name`` (resolved in the request's workspace).

    >>> is_platform_ref("qwen3"), is_platform_ref("default/qwen3"), is_platform_ref("./x")
    (True, True, False)
    """
    return is_workspace_ref(value) or (isinstance(value, str)
                                       and _PLAIN_REF.fullmatch(value) is not None)


def is_local_ref(value: object) -> bool:
    """True for what a local run may take instead of a ref: a non-empty path string.

    >>> is_local_ref("./pkg"), is_local_ref(""), is_local_ref(3)
    (True, False, False)
    """
    return isinstance(value, str) and bool(value.strip()) and "\x00" not in value


def check_job(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK600–EK613 over ``inputs.job`` (strict refs unless ``options.allow_local_refs``)."""
    if inputs.job is None:
        return
    yield from job_diagnostics(inputs.job, allow_local_refs=inputs.options.allow_local_refs)


def job_diagnostics(job: JobDoc, *, allow_local_refs: bool = False) -> Iterator[Diagnostic]:
    """Every diagnostic for one job file; the trainer calls this with ``allow_local_refs=True``."""
    if job.error is not None:
        yield EK611.at(job.path, f"job file is not valid JSON: {job.error}", line=job.error_line)
        return
    if not isinstance(job.data, Mapping):
        yield EK611.at(job.path, f"job file is {json_kind(job.data)}, not a JSON object", line=1)
        return
    settings, problems = job.typed
    for problem in problems:
        yield _problem(job, problem)
    yield from _refs(job, job.data, allow_local_refs)
    yield from _steps(job, job.data.get("training"))
    training, unreadable = ((settings.training, frozenset()) if settings is not None
                            else _readable_training(job.data.get("training"), problems))
    if training is None:
        return
    for found in findings(training, unreadable):
        where = ".".join(found.path)
        text = found.message if f"`{where}`" in found.message else f"`{where}`: {found.message}"
        yield found.rule.at(job.path, text,
                            line=job.line_of(*found.path) or job.line_of(*found.path[:-1]),
                            severity=Severity.WARNING if found.warning else None)


CHECKS = (check_job,)


def _readable_training(training: Any,
                       problems: list[Problem]) -> tuple[GrpoSettings | None, frozenset[str]]:
    """The ``training`` block with every refused field left at its default, and those fields.

    Why: a wrong value in one field (EK609, EK604, ...) must not hide a cross-field violation
    between two others; the rules that read a refused field are skipped (``cross_field``).
    """
    if not isinstance(training, Mapping):
        return None, frozenset()
    kept: dict[str, Any] = copy.deepcopy(dict(training))
    unreadable: set[str] = set()
    for problem in problems:
        path = problem.path
        if problem.kind == "converted" or len(path) < 2 or path[0] != "training":
            continue
        unreadable.add(path[1])
        _drop(kept, path[1:])
    kept.setdefault("type", "grpo")  # a missing type is EK600; no rule reads it
    try:
        return grpo_settings({"training": kept}), frozenset(unreadable)
    except JobSpecError:  # e.g. a block that is not an object: nothing left to read
        return None, frozenset()


def _drop(mapping: dict[str, Any], path: tuple[str, ...]) -> None:
    """Remove ``path`` (a key, or a key inside nested objects) from ``mapping`` in place."""
    head, *rest = path
    value = mapping.get(head)
    if rest and isinstance(value, dict):
        _drop(value, tuple(rest))
    else:
        mapping.pop(head, None)


def _problem(job: JobDoc, problem: Problem) -> Diagnostic:
    """A model problem under its code: unknown EK610, missing type EK600, refs EK608, ..."""
    path, where = problem.path, ".".join(problem.path)
    line = job.line_of(*path) or job.line_of(*path[:-1]) or 1
    if problem.kind == "unknown":
        return EK610.at(job.path, f"`{where}` is not a field of the GRPO job", line=line,
                        hint=_did_you_mean(path))
    if path == ("training", "type") and problem.kind == "required":
        return EK600.at(job.path,
                        "`training.type` is missing (submit fails with union_tag_not_found)",
                        line=line)
    training = job.data.get("training")
    merged = isinstance(training, Mapping) and training.get("finetuning_type") == "lora_merged"
    if path == ("training", "finetuning_type") and merged:
        return EK601.at(job.path, "`training.finetuning_type: lora_merged` is rejected: GRPO "
                        "does not merge adapters", line=line,
                        hint="Use `lora` (adapter) or `all_weights` (a deployable model).")
    if path == ("training", "temperature") and "must be > " in problem.message:
        return EK604.at(job.path, f"{problem.message} (greedy groups carry no signal)", line=line)
    if len(path) == 1 and path[0] in REF_FIELDS:
        return EK608.at(job.path, problem.message, line=line)
    severity = Severity.WARNING if problem.kind == "converted" else None
    return EK609.at(job.path, problem.message, line=line, severity=severity)


_NOT_KNOBS = {
    "top_p": "The platform compiles `top_p: 1.0` and has no job field for it; remove the key.",
}
"""Keys users write from other trainers, with why they are not fields here."""


def _did_you_mean(path: tuple[str, ...]) -> str | None:
    if path[-1] in _NOT_KNOBS:
        return _NOT_KNOBS[path[-1]]
    cls: Any = JobSettings
    for key in path[:-1]:
        fld = {f.name: f for f in dataclasses.fields(cls)}.get(key)
        cls = _model_of(fld.type if fld else None)
        if cls is None:
            return None
    return did_you_mean(path[-1], (f.name for f in dataclasses.fields(cls)), *path[:-1])


def _model_of(hint: Any) -> Any:
    name = str(hint).split("|")[0].strip()
    found = getattr(job_model, name, None)
    return found if dataclasses.is_dataclass(found) else None


def _refs(job: JobDoc, data: Mapping[str, Any], allow_local: bool) -> Iterator[Diagnostic]:
    """EK608: ``workspace/name`` (or ``name``) strings; paths only for a local run."""
    for key in REF_FIELDS:
        value = data.get(key)
        if not isinstance(value, str) and value is not None:
            continue  # a wrong type is already reported by the model
        if is_platform_ref(value) or (allow_local and is_local_ref(value)):
            continue
        line = job.line_of(key)
        if value is None:
            if key == "environment":  # the model leaves it optional; GRPO needs it
                yield EK608.at(job.path, "`environment` is missing (GRPO needs one)", line=line)
        else:
            yield EK608.at(job.path, f"`{key}` is {value!r}, not a `workspace/name` string",
                           line=line)


def _steps(job: JobDoc, training: Any) -> Iterator[Diagnostic]:
    """EK603: ``max_steps`` caps mid-epoch; not together with an explicit ``epochs``."""
    if not isinstance(training, Mapping):
        return
    if training.get("max_steps") is not None and training.get("epochs") is not None:
        yield EK603.at(job.path, "`training.max_steps` is set together with `training.epochs` "
                       "(stops mid-epoch)", line=job.line_of("training", "max_steps"))
