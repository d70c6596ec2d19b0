"""EK6xx: the platform's ``rl`` GRPO job JSON, checked before submit.

Facts from seed 000 ("Fast path — rl (GRPO)", "rl (DPO / GRPO) gotchas") and seed 001 ("Key
hyperparameters", "LoRA fields"). Types and ranges come from ``envkit schema job``
(``envkit/schemas/job.schema.json``), so the schema users see and the check that runs agree;
the cross-field rules the seeds name each have their own code.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from envkit.diagnostics import Diagnostic, Severity
from envkit.schemas import load_schema
from envkit.validators._base import Inputs, Rule

if TYPE_CHECKING:
    import jsonschema

    from envkit.job import JobDoc

__all__ = ["CHECKS", "REF_FIELDS", "RULES", "is_local_ref", "is_workspace_ref", "job_diagnostics"]

REF_FIELDS = ("model", "dataset", "environment")
_WORKSPACE_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_DEFAULT_GENERATIONS = 8  # seed 001 "Key hyperparameters": num_generations_per_prompt default

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
    "`batch_size` not divisible by `num_generations_per_prompt`",
    "A step holds whole prompt groups: `num_prompts_per_step` is derived as `batch_size / "
    "num_generations_per_prompt`, and their product must be a multiple of `batch_size`.",
    "Pick `batch_size` as a multiple of `num_generations_per_prompt` (default 8).",
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
    "job field has the wrong type or is out of range",
    "The platform validates the job against its schema at submit; a wrong type or an "
    "out-of-range value fails there. Types and ranges: `envkit schema job`.",
    "Fix the value to the type and range `envkit schema job` gives for the field.",
)
EK610 = Rule(
    "EK610",
    Severity.WARNING,
    "unknown job field",
    "A key the platform docs do not list is most often a typo or a field from another backend "
    "(automodel's `schedule`/`batch` blocks) and is rejected or ignored. The seeds say the "
    "installed build's `nemo customization rl explain` is authoritative, so this warns.",
    "Check the spelling against `envkit schema job` / `nemo customization rl explain`.",
)
EK611 = Rule(
    "EK611",
    Severity.ERROR,
    "job file is not a JSON object",
    "Submit parses the file as one JSON object.",
    "Write the job as one JSON object (UTF-8).",
)

RULES = (EK600, EK601, EK602, EK603, EK604, EK605, EK606, EK607, EK608, EK609, EK610, EK611)


def is_workspace_ref(value: object) -> bool:
    """True for a platform reference ``workspace/name``.

    >>> is_workspace_ref("default/qwen3-0.6b"), is_workspace_ref("./data"), is_workspace_ref({})
    (True, False, False)
    """
    return isinstance(value, str) and _WORKSPACE_REF.fullmatch(value) is not None


def is_local_ref(value: object) -> bool:
    """True for what a local run may take instead of a ref: a non-empty path string.

    >>> is_local_ref("./pkg"), is_local_ref(""), is_local_ref(3)
    (True, False, False)
    """
    return isinstance(value, str) and bool(value.strip()) and "\x00" not in value


def check_job(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK600–EK611 over ``inputs.job`` (strict refs unless ``options.allow_local_refs``)."""
    if inputs.job is None:
        return
    yield from job_diagnostics(inputs.job, allow_local_refs=inputs.options.allow_local_refs)


def job_diagnostics(job: JobDoc, *, allow_local_refs: bool = False) -> Iterator[Diagnostic]:
    """Every diagnostic for one job file; the trainer calls this with ``allow_local_refs=True``."""
    if job.error is not None or not isinstance(job.data, Mapping):
        yield _not_object(job)
        return
    data = job.data
    training = data.get("training")
    yield from _refs(job, data, allow_local_refs)
    yield from _schema_errors(job)
    yield from _unknown_keys(job)
    if not isinstance(training, Mapping):
        return
    for rule_check in TRAINING_CHECKS:
        yield from rule_check(job, training)


def _not_object(job: JobDoc) -> Diagnostic:
    if job.error is not None:
        return EK611.at(job.path, f"job file is not valid JSON: {job.error}", line=job.error_line)
    return EK611.at(job.path, f"job file is {_kind(job.data)}, not a JSON object", line=1)


def _refs(job: JobDoc, data: Mapping[str, Any], allow_local: bool) -> Iterator[Diagnostic]:
    """EK608: the three references are ``workspace/name`` strings (or paths, run locally)."""
    for key in REF_FIELDS:
        value = data.get(key)
        if is_workspace_ref(value) or (allow_local and is_local_ref(value)):
            continue
        line = job.line_of(key)
        if value is None:
            yield EK608.at(job.path, f"`{key}` is missing", line=line)
        elif isinstance(value, Mapping):
            yield EK608.at(
                job.path, f"`{key}` is an object; GRPO takes a plain string ref", line=line
            )
        else:
            yield EK608.at(
                job.path, f"`{key}` is {value!r}, not a `workspace/name` string", line=line
            )


def _check_type(job: JobDoc, training: Mapping[str, Any]) -> Iterator[Diagnostic]:
    """EK600: the union discriminator is required."""
    if "type" not in training:
        yield EK600.at(
            job.path,
            "`training.type` is missing (submit fails with union_tag_not_found)",
            line=job.line_of("training"),
        )


def _check_lora(job: JobDoc, training: Mapping[str, Any]) -> Iterator[Diagnostic]:
    """EK601: a ``lora`` block only with ``finetuning_type: lora``; never ``lora_merged``."""
    kind = training.get("finetuning_type")
    if kind == "lora_merged":
        yield EK601.at(
            job.path,
            "`training.finetuning_type: lora_merged` is rejected: GRPO does not merge adapters",
            line=job.line_of("training", "finetuning_type"),
            hint="Use `lora` (adapter) or `all_weights` (a deployable model entity).",
        )
    elif "lora" in training and kind in (None, "all_weights"):
        shown = "is not set (default `all_weights`)" if kind is None else "is `all_weights`"
        yield EK601.at(
            job.path,
            f"`training.lora` is given but `training.finetuning_type` {shown}",
            line=job.line_of("training", "lora"),
        )


def _check_triton(job: JobDoc, training: Mapping[str, Any]) -> Iterator[Diagnostic]:
    """EK602: ``lora.use_triton`` must be left unset; ``true`` with TP > 1 is rejected."""
    lora = training.get("lora")
    if not isinstance(lora, Mapping) or "use_triton" not in lora:
        return
    tp = _get(training, "parallelism", "tensor_parallel_size")
    line = job.line_of("training", "lora", "use_triton")
    if lora["use_triton"] is True and _int(tp) and tp > 1:
        yield EK602.at(
            job.path,
            f"`training.lora.use_triton: true` with `tensor_parallel_size` {tp} "
            "is rejected at submit",
            line=line,
        )
    else:
        yield EK602.at(
            job.path,
            "`training.lora.use_triton` is set; leave it unset so the compiler picks",
            line=line,
            severity=Severity.WARNING,
        )


def _check_steps(job: JobDoc, training: Mapping[str, Any]) -> Iterator[Diagnostic]:
    """EK603: ``max_steps`` caps mid-epoch; not together with ``epochs``."""
    if training.get("max_steps") is not None and training.get("epochs") is not None:
        yield EK603.at(
            job.path,
            "`training.max_steps` is set together with `training.epochs` (stops mid-epoch)",
            line=job.line_of("training", "max_steps"),
        )


def _check_temperature(job: JobDoc, training: Mapping[str, Any]) -> Iterator[Diagnostic]:
    """EK604: sampling must not be greedy."""
    value = training.get("temperature")
    if _number(value) and not value > 0:  # `not >` also catches NaN, which json accepts
        yield EK604.at(
            job.path,
            f"`training.temperature` is {value}; it must be > 0 (greedy groups carry no signal)",
            line=job.line_of("training", "temperature"),
        )


def _check_batch(job: JobDoc, training: Mapping[str, Any]) -> Iterator[Diagnostic]:
    """EK605: whole prompt groups per step."""
    batch = training.get("batch_size")
    groups = training.get("num_generations_per_prompt", _DEFAULT_GENERATIONS)
    if not (_int(batch) and _int(groups) and batch > 0 and groups > 0):
        return
    if batch % groups:
        shown = "" if "num_generations_per_prompt" in training else " (default)"
        yield EK605.at(
            job.path,
            f"`training.batch_size` {batch} is not divisible by "
            f"`num_generations_per_prompt` {groups}{shown}",
            line=job.line_of("training", "batch_size"),
        )
    prompts = training.get("num_prompts_per_step")
    if _int(prompts) and prompts > 0 and (prompts * groups) % batch:
        yield EK605.at(
            job.path,
            f"`num_prompts_per_step` {prompts} x `num_generations_per_prompt` {groups} "
            f"= {prompts * groups} is not a multiple of `batch_size` {batch}",
            line=job.line_of("training", "num_prompts_per_step"),
            hint=f"Use `num_prompts_per_step` {batch // groups} "
            "(= batch_size / num_generations_per_prompt)."
            if batch % groups == 0
            else None,
        )


def _check_router_coef(job: JobDoc, training: Mapping[str, Any]) -> Iterator[Diagnostic]:
    """EK606: one writer for the top-level ``router_aux_loss_coef`` HF key."""
    overrides = training.get("hf_config_overrides")
    if training.get("router_aux_loss_coef") is None or not isinstance(overrides, Mapping):
        return
    if "router_aux_loss_coef" in overrides:
        yield EK606.at(
            job.path,
            "`training.router_aux_loss_coef` and "
            "`training.hf_config_overrides.router_aux_loss_coef` are both set",
            line=job.line_of("training", "hf_config_overrides", "router_aux_loss_coef"),
        )


def _check_backend(job: JobDoc, training: Mapping[str, Any]) -> Iterator[Diagnostic]:
    """EK607: every automodel-only feature under ``dtensor``, reported at once as submit does."""
    if training.get("policy_backend") != "dtensor":
        return
    ep = _get(training, "parallelism", "expert_parallel_size")
    conflicts = (
        (
            training.get("finetuning_type") == "lora",
            ("finetuning_type",),
            "LoRA (`finetuning_type: lora`)",
        ),
        (
            _int(ep) and ep > 1,
            ("parallelism", "expert_parallel_size"),
            f"`expert_parallel_size` {ep}",
        ),
        (training.get("automodel_kwargs") is not None, ("automodel_kwargs",), "`automodel_kwargs`"),
    )
    for present, keypath, what in conflicts:
        if present:
            yield EK607.at(
                job.path,
                f"{what} needs `policy_backend: automodel`, not `dtensor`",
                line=job.line_of("training", *keypath),
            )


TRAINING_CHECKS = (
    _check_type,
    _check_lora,
    _check_triton,
    _check_steps,
    _check_temperature,
    _check_batch,
    _check_router_coef,
    _check_backend,
)
"""Cross-field rules over ``training``, one per code, in code order."""

CHECKS = (check_job,)


# -- schema-level checks (EK609 types/ranges, EK610 unknown keys) -------------------------------

_OWNED = {
    (("training", "temperature"), "exclusiveMinimum"),  # EK604
}
"""Schema failures another code reports with a better message."""


def _schema_errors(job: JobDoc) -> Iterator[Diagnostic]:
    """EK609: JSON Schema types and ranges, minus what a dedicated rule reports."""
    for error in _type_validator().iter_errors(job.data):
        path = tuple(error.absolute_path)
        if _owned(path, error):
            continue
        where = _dotted(path)
        yield EK609.at(
            job.path,
            f"`{where}` {_describe(error)}" if where else _describe(error),
            line=job.line_of(*path) if path else 1,
        )


def _owned(path: tuple[Any, ...], error: jsonschema.ValidationError) -> bool:
    if path[:1] and path[0] in REF_FIELDS:
        return True  # EK608
    if error.validator == "required":
        return path == () or (path == ("training",) and "'type'" in error.message)  # EK608, EK600
    if path == ("training", "finetuning_type") and error.instance == "lora_merged":
        return True  # EK601
    return (path, error.validator) in _OWNED


def _describe(error: jsonschema.ValidationError) -> str:
    value, schema = error.instance, error.schema
    if error.validator == "type":
        expected = (
            schema["type"] if isinstance(schema["type"], str) else " or ".join(schema["type"])
        )
        return f"is {_kind(value)}; expected {expected}"
    if error.validator in ("enum", "const"):
        allowed = schema.get("enum", [schema.get("const")])
        return f"is {value!r}; expected {' or '.join(map(repr, allowed))}"
    if error.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        ops = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
        return f"is {value!r}; must be {ops[error.validator]} {schema[error.validator]}"
    if error.validator == "required":
        return error.message.replace("is a required property", "is required")
    return error.message


def _unknown_keys(job: JobDoc) -> Iterator[Diagnostic]:
    """EK610: keys the schema does not list, at every level that lists its keys."""
    stack: list[tuple[tuple[str, ...], Any, Mapping[str, Any]]] = [
        ((), job.data, load_schema("job"))
    ]
    while stack:
        path, value, schema = stack.pop()
        known = schema.get("properties")
        if not isinstance(value, Mapping) or not isinstance(known, Mapping):
            continue
        for key, item in value.items():
            if key in known:
                stack.append(((*path, key), item, known[key]))
                continue
            match = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.8)
            hint = f"Did you mean `{_dotted((*path, match[0]))}`?" if match else None
            yield EK610.at(
                job.path,
                f"`{_dotted((*path, key))}` is not a known GRPO job field",
                line=job.line_of(*path, key),
                hint=hint,
            )


@cache
def _type_validator() -> jsonschema.Draft202012Validator:
    """The job schema without its cross-field ``allOf`` rules: those have their own codes."""
    import jsonschema

    schema = _strip(copy.deepcopy(load_schema("job")), "allOf")
    return jsonschema.Draft202012Validator(schema)


def _strip(node: Any, key: str) -> Any:
    if isinstance(node, dict):
        node.pop(key, None)
        for value in node.values():
            _strip(value, key)
    elif isinstance(node, list):
        for value in node:
            _strip(value, key)
    return node


# -- small helpers ---------------------------------------------------------------------------


def _get(mapping: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if not isinstance(mapping, Mapping):
            return None
        mapping = mapping.get(key)
    return mapping


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _dotted(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _kind(value: Any) -> str:
    names = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
    }
    return names.get(type(value), "a number")
