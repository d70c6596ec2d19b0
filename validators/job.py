"""EK6xx: the platform's ``rl`` GRPO job JSON, checked before submit.

Names, types, ranges and defaults come from the one job model (``envkit.model.jobspec``), which also
generates ``envkit schema job``; the cross-field rules are the platform's own
(``job_rules.py``). A job passes here exactly when the platform's job model and its pre-compile
layout check accept it; every rejection carries a code and the key path.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from envkit.model.diagnostics import Diagnostic, Severity, close_matches
from envkit.validators._base import Inputs, Rule

if TYPE_CHECKING:
    from envkit.model.jobfile import JobDoc
    from envkit.model.jobspec import GrpoSettings, Problem

# The job model (``envkit.model.jobspec``) is imported where a job is checked, not here: a
# package-only ``envkit validate`` (a pre-commit hook) would otherwise build its ~60 dataclasses
# on every start for nothing.

__all__ = ["CHECKS", "REF_FIELDS", "RULES", "is_local_ref", "is_workspace_ref", "job_diagnostics"]

REF_FIELDS = ("model", "dataset", "environment")
_WORKSPACE_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_PLAIN_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

EK600 = Rule(
    "EK600",
    Severity.ERROR,
    "GRPO job: `training.type` missing",
    "`training.type` is the union discriminator and is required: omitting it fails at submit "
    "with `union_tag_not_found` rather than defaulting (the NeMo Customizer guide; the \"GRPO "
    "and Reward Environments\" guide).",
    'Set `"type": "grpo"` in the `training` block.',
)
EK601 = Rule(
    "EK601",
    Severity.ERROR,
    "`lora` block with `finetuning_type: all_weights`; `lora_merged` requested",
    "The schema rejects a `lora` block unless `finetuning_type` is `lora` (`all_weights` is the "
    "default), and rejects `lora_merged` outright: GRPO does not merge adapters at export.",
    'Set `"finetuning_type": "lora"` to train an adapter, or drop `lora` for full weights.',
)
EK602 = Rule(
    "EK602",
    Severity.ERROR,
    "`lora.use_triton: true` with `tensor_parallel_size > 1` (warn when set)",
    "The compiler picks Triton LoRA kernels itself (true at TP 1, false above). An explicit "
    "`true` with tensor parallelism is rejected at submit: the kernels cannot take the sharded "
    "adapter weights. The seeds say to leave it unset.",
    "Remove `training.lora.use_triton`.",
    when=((Severity.ERROR, "when it is `true` with `tensor_parallel_size > 1`: submit rejects it"),
          (Severity.WARNING, "when it is set otherwise: the compiler picks the kernels itself")),
)
EK603 = Rule(
    "EK603",
    Severity.WARNING,
    "`max_steps` together with `epochs`",
    "`max_steps` is a global cap that stops mid-epoch; it sits in smoke-test fixtures so they "
    "finish in a minute and is the most-copied wrong value (the NeMo Customizer guide).",
    "Drop `training.max_steps` for real runs and size the run with `epochs`.",
)
EK604 = Rule(
    "EK604",
    Severity.ERROR,
    "`temperature <= 0`",
    "Greedy sampling makes every response in a group identical, so every advantage is zero "
    "and the run is a no-op (the \"GRPO and Reward Environments\" guide: must be greater than 0).",
    "Use `temperature` > 0; 1.0 is the default.",
)
EK605 = Rule(
    "EK605",
    Severity.ERROR,
    "rollouts per step not a multiple of `batch_size`",
    "A GRPO step generates `num_prompts_per_step x num_generations_per_prompt` rollouts and "
    "trains on them in optimizer steps of `batch_size`; `num_prompts_per_step` defaults to "
    "`max(batch_size // num_generations_per_prompt, 1)`, so a group size that does not divide "
    "`batch_size` leaves a remainder the platform rejects before compiling.",
    "Pick `batch_size` as a multiple of `num_generations_per_prompt` (default 8), or set "
    "`num_prompts_per_step` so the product is a multiple of `batch_size`.",
)
EK606 = Rule(
    "EK606",
    Severity.ERROR,
    "`router_aux_loss_coef` both top level and in `hf_config_overrides`",
    "Both write the same top-level HF config key, so the job is rejected (the \"GRPO and Reward "
    "Environments\" guide).",
    "Keep one: `hf_config_overrides` when the model nests the key (Qwen3.5: under `text_config`).",
)
EK607 = Rule(
    "EK607",
    Severity.ERROR,
    "`policy_backend: dtensor` with an automodel-only feature",
    "`dtensor` runs stock HF modules on FSDP2 for pre-Hopper GPUs and supports none of LoRA, "
    "`expert_parallel_size` above 1, or `automodel_kwargs`; submit rejects each (the \"GRPO and "
    "Reward Environments\" guide).",
    "Use `policy_backend: automodel` (Hopper or newer), or drop the automodel-only feature.",
)
EK608 = Rule(
    "EK608",
    Severity.ERROR,
    "`model`/`dataset`/`environment` not `workspace/name` strings",
    "GRPO takes three plain string references `workspace/name`, not objects (the NeMo "
    "Customizer guide, 'String refs'); the environment and dataset are two separate FileSets.",
    'Use strings such as `"environment": "default/my-env"`.',
)
EK609 = Rule(
    "EK609",
    Severity.ERROR,
    "job field has the wrong type or is out of range (warn when converted)",
    "The platform validates the job against its model at submit; a wrong type or an "
    "out-of-range value fails there. A number or boolean written as a string is converted "
    "there, so it is a warning here. Types and ranges: `envkit schema job`.",
    "Fix the value to the type and range `envkit schema job` gives for the field.",
    when=((Severity.ERROR, "when the platform refuses the value"),
          (Severity.WARNING, "when the platform converts it (a number or boolean as a string)")),
)
EK610 = Rule(
    "EK610",
    Severity.ERROR,
    "unknown job field",
    "The platform's job model forbids keys it does not define: a typo or a field from another "
    "backend (automodel's `schedule`/`batch` blocks, `top_p`) fails submit.",
    "Check the spelling against `envkit schema job` / `nemo customization rl explain`.",
)
EK611 = Rule(
    "EK611",
    Severity.ERROR,
    "job file is not a JSON object",
    "Submit parses the file as one JSON object.",
    "Write the job as one JSON object (UTF-8).",
)

EK612 = Rule(
    "EK612",
    Severity.ERROR,
    "training fields that conflict",
    "The platform's job model rejects pairs of fields that NeMo-RL would assert against after "
    "the GPUs are claimed, or that would silently do nothing: truncated IS without its ratios, "
    "incomplete reward shaping, reversed ranges, `batch_multiplier` without dynamic sampling, "
    "`max_new_tokens` above `max_seq_length`, and the like.",
    "Make the fields agree as the message says.",
)
EK613 = Rule(
    "EK613",
    Severity.ERROR,
    "GPU layout does not divide",
    "Before compiling, the platform checks that the GPUs divide by the model-parallel size, "
    "that `batch_size` divides by `micro_batch_size` x data-parallel size, and that the vLLM "
    "engine's tensor parallel size fits a node.",
    "Adjust `parallelism`, `batch_size` or `micro_batch_size` so the sizes divide.",
)

RULES = (
    EK600,
    EK601,
    EK602,
    EK603,
    EK604,
    EK605,
    EK606,
    EK607,
    EK608,
    EK609,
    EK610,
    EK611,
    EK612,
    EK613,
)
_BY_CODE = {rule.code: rule for rule in RULES}


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
    return is_workspace_ref(value) or (
        isinstance(value, str) and _PLAIN_REF.fullmatch(value) is not None
    )


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
    if job.error is not None or not isinstance(job.data, Mapping):
        yield _not_object(job)
        return
    settings, problems = job.typed
    for problem in problems:
        yield _problem(job, problem)
    yield from _refs(job, job.data, allow_local_refs)
    yield from _steps(job, job.data.get("training"))
    training, unreadable = (
        (settings.training, frozenset())
        if settings is not None
        else _readable_training(job.data.get("training"), problems)
    )
    if training is None:
        return
    from envkit.validators.job_rules import findings  # a package with a job file only

    for found in findings(training, unreadable=unreadable):
        rule = _BY_CODE[found.code]
        where = ".".join(found.path)
        text = found.message if f"`{where}`" in found.message else f"`{where}`: {found.message}"
        yield rule.at(
            job.path,
            text,
            line=job.line_of(*found.path) or job.line_of(*found.path[:-1]),
            severity=Severity.WARNING if found.warning else None,
        )


CHECKS = (check_job,)


def _readable_training(
    training: Any, problems: list[Problem]
) -> tuple[GrpoSettings | None, frozenset[str]]:
    """The ``training`` block with every refused field left at its default, and those fields.

    Why: a wrong value in one field (EK609, EK604, ...) must not hide a cross-field violation
    between two others; the rules that read a refused field are skipped (``job_rules``).
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
    from envkit.model.jobspec import JobSpecError, grpo_settings

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


def _not_object(job: JobDoc) -> Diagnostic:
    if job.error is not None:
        return EK611.at(job.path, f"job file is not valid JSON: {job.error}", line=job.error_line)
    return EK611.at(job.path, f"job file is {_kind(job.data)}, not a JSON object", line=1)


def _problem(job: JobDoc, problem: Problem) -> Diagnostic:
    """A model problem under its code: unknown EK610, missing type EK600, refs EK608, ..."""
    path, where = problem.path, ".".join(problem.path)
    line = job.line_of(*path) or job.line_of(*path[:-1]) or 1
    if problem.kind == "unknown":
        return EK610.at(
            job.path,
            f"`{where}` is not a field of the GRPO job",
            line=line,
            hint=_did_you_mean(path),
        )
    if path == ("training", "type") and problem.kind == "required":
        return EK600.at(
            job.path,
            "`training.type` is missing (submit fails with union_tag_not_found)",
            line=line,
        )
    if path == ("training", "finetuning_type") and _get(job.data, *path) == "lora_merged":
        return EK601.at(
            job.path,
            "`training.finetuning_type: lora_merged` is rejected: GRPO does not merge adapters",
            line=line,
            hint="Use `lora` (adapter) or `all_weights` (a deployable model).",
        )
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
    from envkit.model.jobspec import JobSettings

    cls: Any = JobSettings
    for key in path[:-1]:
        fld = {f.name: f for f in dataclasses.fields(cls)}.get(key)
        cls = _model_of(fld.type if fld else None)
        if cls is None:
            return None
    names = [f.name for f in dataclasses.fields(cls)]
    match = close_matches(path[-1], names, n=1, cutoff=0.8)
    return f"Did you mean `{'.'.join((*path[:-1], match[0]))}`?" if match else None


def _model_of(hint: Any) -> Any:
    import envkit.model.jobspec as model

    name = str(hint).split("|")[0].strip()
    found = getattr(model, name, None)
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
            yield EK608.at(
                job.path, f"`{key}` is {value!r}, not a `workspace/name` string", line=line
            )


def _steps(job: JobDoc, training: Any) -> Iterator[Diagnostic]:
    """EK603: ``max_steps`` caps mid-epoch; not together with an explicit ``epochs``."""
    if not isinstance(training, Mapping):
        return
    if training.get("max_steps") is not None and training.get("epochs") is not None:
        yield EK603.at(
            job.path,
            "`training.max_steps` is set together with `training.epochs` (stops mid-epoch)",
            line=job.line_of("training", "max_steps"),
        )


def _get(mapping: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(mapping, Mapping):
            return None
        mapping = mapping.get(key)
    return mapping


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), "a number")
