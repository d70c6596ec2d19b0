"""Typed, read-only access to a GRPO job's ``training`` block, with the platform's defaults.

The trainer reads the same job JSON that validates and submits (SPEC §8), so it should not
re-parse it or guess defaults. Defaults below are the ones the seeds state; where a seed states
none, the value is ``None`` ("unset: the trainer or platform decides") and the field doc says so.
Seed references: 000 = customizer guide "Fast path — rl (GRPO)" / "rl (DPO / GRPO) gotchas";
001 = "GRPO and Reward Environments" ("Key hyperparameters", "LoRA fields").

Run ``envkit validate --job`` first: ``grpo_settings`` checks types only, so that a bad value
fails with its key path instead of deep inside the training loop.
"""

from __future__ import annotations

import collections.abc
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

__all__ = [
    "GrpoSettings",
    "JobSpecError",
    "LoraSettings",
    "ParallelismSettings",
    "grpo_settings",
]


_T = TypeVar("_T")


class JobSpecError(ValueError):
    """A ``training`` value has the wrong type; the message names its key path."""


@dataclass(frozen=True)
class LoraSettings:
    """``training.lora`` (seed 001 "LoRA fields")."""

    rank: int = 16
    alpha: float = 32
    """Effective LR multiplier on the adapter is ``alpha / rank``."""
    dropout: float = 0.0
    target_modules: tuple[str, ...] | None = None
    """None with ``exclude_modules`` None adapts every linear layer."""
    exclude_modules: tuple[str, ...] | None = None
    use_triton: bool | None = None
    """Unset: the compiler picks (true at tensor_parallel_size 1, false above)."""


@dataclass(frozen=True)
class ParallelismSettings:
    """``training.parallelism`` (seed 000 LoRA default job); unset sizes mean 1."""

    num_nodes: int = 1
    num_gpus_per_node: int = 1
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    context_parallel_size: int = 1
    expert_parallel_size: int = 1


@dataclass(frozen=True)
class GrpoSettings:
    """``training`` of an ``rl`` GRPO job. Defaults are seed 001's unless noted."""

    type: Literal["grpo"] = "grpo"
    finetuning_type: Literal["all_weights", "lora"] = "all_weights"
    """Seed 000: full-weight is the schema default; LoRA is something you set."""
    lora: LoraSettings | None = None
    """Filled with ``LoraSettings()`` defaults when ``finetuning_type`` is lora (seed 001)."""
    # generation
    num_generations_per_prompt: int = 8
    num_prompts_per_step: int | None = None
    """Derived: ``batch_size // num_generations_per_prompt`` (see ``prompts_per_step``)."""
    temperature: float = 1.0
    top_p: float | None = None
    top_k: int | None = None
    max_rollout_turns: int = 1
    max_seq_length: int | None = None
    max_new_tokens: int | None = None
    # optimisation (no seed defaults: values in seed 000's job are recommendations)
    learning_rate: float | None = None
    min_learning_rate: float | None = None
    adam_eps: float | None = None
    warmup_steps: int | None = None
    weight_decay: float | None = None
    epochs: int | None = None
    max_steps: int | None = None
    batch_size: int | None = None
    micro_batch_size: int | None = None
    activation_checkpointing: bool | None = None
    seed: int | None = None
    # GRPO loss and advantages
    ref_policy_kl_penalty: float = 0.0
    ratio_clip_min: float | None = None
    ratio_clip_max: float | None = None
    ratio_clip_c: float | None = None
    advantage_clip_low: float | None = None
    advantage_clip_high: float | None = None
    normalize_rewards: bool | None = None
    use_leave_one_out_baseline: bool | None = None
    overlong_filtering: bool = False
    use_dynamic_sampling: bool | None = None
    batch_multiplier: float | None = None
    dynamic_sampling_max_gen_batches: int | None = None
    truncated_importance_sampling_type: str | None = None
    truncated_importance_sampling_ratio: float | None = None
    use_importance_sampling_correction: bool | None = None
    # validation and checkpoints
    val_at_start: bool = False
    val_at_end: bool | None = None
    val_check_interval: int | None = None
    keep_top_k: int | None = None
    # backend and batching
    policy_backend: Literal["automodel", "dtensor"] = "automodel"
    batching_strategy: Literal["dynamic", "static", "sequence_packing"] = "dynamic"
    train_mb_tokens: int | None = None
    """Derived: ``max_seq_length * micro_batch_size`` (see ``mb_tokens``)."""
    sequence_length_round: int = 64
    router_aux_loss_coef: float | None = None
    hf_config_overrides: Mapping[str, Any] | None = None
    automodel_kwargs: Mapping[str, Any] | None = None
    vllm_tensor_parallel_size: int | None = None
    vllm_gpu_memory_utilization: float | None = None
    execution_profile: str | None = None
    parallelism: ParallelismSettings = field(default_factory=ParallelismSettings)
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys of ``training`` not listed above (EK610 warns about them), passed through as-is."""

    @property
    def prompts_per_step(self) -> int | None:
        """``num_prompts_per_step``, or derived from ``batch_size`` (seed 001)."""
        if self.num_prompts_per_step is not None:
            return self.num_prompts_per_step
        if self.batch_size is None:
            return None
        return self.batch_size // self.num_generations_per_prompt

    @property
    def mb_tokens(self) -> int | None:
        """``train_mb_tokens``, or ``max_seq_length * micro_batch_size`` (seed 001)."""
        if self.train_mb_tokens is not None:
            return self.train_mb_tokens
        if self.max_seq_length is None:
            return None
        return self.max_seq_length * (self.micro_batch_size or 1)


def grpo_settings(job_data: Mapping[str, Any]) -> GrpoSettings:
    """Read ``job_data["training"]`` into ``GrpoSettings``.

    :raises JobSpecError: ``training`` is missing or a known field has the wrong type.
    """
    training = job_data.get("training") if isinstance(job_data, Mapping) else None
    if not isinstance(training, Mapping):
        msg = "`training` must be an object (run `envkit validate --job` for details)"
        raise JobSpecError(msg)
    settings = _build("training", training, GrpoSettings)
    if settings.finetuning_type == "lora" and settings.lora is None:
        settings = dataclasses.replace(settings, lora=LoraSettings())  # seed 001: defaults filled
    return settings


def _build(where: str, value: Any, cls: type[_T]) -> _T:
    """``cls`` from a JSON object: known keys converted, nulls left at their defaults."""
    if not isinstance(value, Mapping):
        msg = f"`{where}` must be an object, not {value!r}"
        raise JobSpecError(msg)
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    kwargs = {
        k: _convert(f"{where}.{k}", v, hints[k])
        for k, v in value.items()
        if k in names and v is not None
    }
    if "extra" in hints:
        kwargs["extra"] = {k: v for k, v in value.items() if k not in names}
    return cls(**kwargs)


def _convert(where: str, value: Any, hint: Any) -> Any:
    """Check ``value`` against one field's type hint (``X | None`` already excludes None)."""
    options = (
        [a for a in get_args(hint) if a is not type(None)]
        if get_origin(hint) in (Union, UnionType)
        else [hint]
    )
    target = options[0]
    if dataclasses.is_dataclass(target):
        return _build(where, value, target)  # type: ignore[arg-type]
    if get_origin(target) is Literal:
        if value not in get_args(target):
            msg = (
                f"`{where}` is {value!r}; expected one of {', '.join(map(repr, get_args(target)))}"
            )
            raise JobSpecError(msg)
        return value
    if get_origin(target) is tuple:
        if not (isinstance(value, list) and all(isinstance(x, str) for x in value)):
            msg = f"`{where}` is {value!r}; expected a list of strings"
            raise JobSpecError(msg)
        return tuple(value)
    if not _CHECKERS[get_origin(target) or target](value):
        msg = f"`{where}` is {value!r}; expected {getattr(target, '__name__', target)}"
        raise JobSpecError(msg)
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_float(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_CHECKERS: dict[Any, Callable[[Any], bool]] = {
    int: _is_int,
    float: _is_float,
    bool: lambda v: isinstance(v, bool),
    str: lambda v: isinstance(v, str),
    Mapping: lambda v: isinstance(v, Mapping),
    collections.abc.Mapping: lambda v: isinstance(v, Mapping),
}
