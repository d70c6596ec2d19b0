"""GRPO settings read from the job JSON ``training`` block (seed 000 "Fast path — rl (GRPO)").

Why a private adapter: the job-schema part owns validation (``validators/job.py``, EK6xx) and
``envkit.jobspec``; the trainer only needs typed values with the seed's defaults, so
:func:`grpo_config` reads the block leniently and can be swapped for ``jobspec.grpo_settings``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from envkit.jobspec import ParallelismSettings
from envkit.trainer.loss import LossConfig

__all__ = [
    "BatchingSettings",
    "ConfigError",
    "GrpoConfig",
    "LoraSettings",
    "ParallelismSettings",
    "grpo_config",
]


class ConfigError(ValueError):
    """The ``training`` block cannot drive a run (wrong type, impossible sizes)."""


@dataclass(frozen=True)
class LoraSettings:
    """seed 001 "LoRA fields"; neither module list set -> every linear layer."""

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: tuple[str, ...] | None = None
    exclude_modules: tuple[str, ...] | None = None


@dataclass(frozen=True)
class BatchingSettings:
    """seed 001 "Key hyperparameters": how rollouts become training micro-batches.

    ``mb_tokens`` is ``train_mb_tokens`` or, unset, ``max_seq_length * micro_batch_size``.
    """

    strategy: str = "dynamic"  # "dynamic" | "static" | "sequence_packing"
    mb_tokens: int = 2048
    sequence_length_round: int = 64


@dataclass(frozen=True)
class GrpoConfig:
    num_generations_per_prompt: int = 8
    batch_size: int = 32
    num_prompts_per_step: int | None = None
    temperature: float = 1.0
    max_new_tokens: int = 512
    max_seq_length: int = 2048
    max_rollout_turns: int = 1
    learning_rate: float = 1e-5
    min_learning_rate: float | None = None
    adam_eps: float = 1e-8
    warmup_steps: int = 0
    weight_decay: float = 0.01
    lr_decay: str = "cosine"
    epochs: int = 1
    max_steps: int | None = None
    micro_batch_size: int = 1
    use_dynamic_sampling: bool = False
    batch_multiplier: float = 1.0
    dynamic_sampling_max_gen_batches: int = 10
    normalize_rewards: bool = True
    use_leave_one_out_baseline: bool = True
    overlong_filtering: bool = False
    val_at_start: bool = False
    val_at_end: bool = False
    val_check_interval: int | None = None
    keep_top_k: int | None = None
    seed: int = 42
    finetuning_type: str = "all_weights"
    activation_checkpointing: bool = False
    policy_backend: str = "automodel"
    hf_config_overrides: dict[str, Any] = field(default_factory=dict)
    """``hf_config_overrides`` with ``router_aux_loss_coef`` folded in at the top level."""
    automodel_kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to Automodel on the platform; not applied locally (``policy.announce_backend``)."""
    vllm_tensor_parallel_size: int = 1
    vllm_gpu_memory_utilization: float = 0.6
    lora: LoraSettings = field(default_factory=LoraSettings)
    loss: LossConfig = field(default_factory=LossConfig)
    batching: BatchingSettings = field(default_factory=BatchingSettings)
    parallelism: ParallelismSettings = field(default_factory=ParallelismSettings)

    @property
    def prompts_per_step(self) -> int:
        """``num_prompts_per_step``, else ``batch_size / num_generations_per_prompt``."""
        if self.num_prompts_per_step is not None:
            return self.num_prompts_per_step
        return max(1, self.batch_size // self.num_generations_per_prompt)

    def total_steps(self, num_rows: int) -> int:
        """``epochs`` over the rows (last partial batch dropped), capped by ``max_steps``."""
        per_epoch = max(1, num_rows // self.prompts_per_step)
        steps = self.epochs * per_epoch
        return min(steps, self.max_steps) if self.max_steps is not None else steps


_LOSS_KEYS = {f.name for f in fields(LossConfig)}
_NESTED = {"lora", "loss", "batching", "parallelism", "hf_config_overrides", "automodel_kwargs"}
_TOP_KEYS = {f.name for f in fields(GrpoConfig)} - _NESTED


def _lora(block: Any) -> LoraSettings:
    if block is None:
        return LoraSettings()
    if not isinstance(block, dict):
        msg = f"`training.lora` must be an object, got {type(block).__name__}"
        raise ConfigError(msg)
    known = {k: v for k, v in block.items() if k in {f.name for f in fields(LoraSettings)}}
    for key in ("target_modules", "exclude_modules"):
        if known.get(key) is not None:
            known[key] = tuple(known[key])
    return LoraSettings(**known)


def _object(block: dict[str, Any], key: str) -> dict[str, Any]:
    value = block.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        msg = f"`training.{key}` must be an object, got {type(value).__name__}"
        raise ConfigError(msg)
    return value


def _batching(block: dict[str, Any]) -> BatchingSettings:
    mb_tokens = block.get("train_mb_tokens")
    if mb_tokens is None:
        seq = block.get("max_seq_length", GrpoConfig.max_seq_length)
        mb_tokens = seq * block.get("micro_batch_size", GrpoConfig.micro_batch_size)
    return BatchingSettings(
        strategy=block.get("batching_strategy", "dynamic"),
        mb_tokens=mb_tokens,
        sequence_length_round=block.get("sequence_length_round", 64),
    )


def _hf_overrides(block: dict[str, Any]) -> dict[str, Any]:
    """seed 001: ``router_aux_loss_coef`` is a top-level HF config override."""
    overrides = dict(_object(block, "hf_config_overrides"))
    if block.get("router_aux_loss_coef") is not None:
        if "router_aux_loss_coef" in overrides:  # EK606
            msg = (
                "`router_aux_loss_coef` is set both on `training` and in "
                "`training.hf_config_overrides`; keep one (EK606)"
            )
            raise ConfigError(msg)
        overrides["router_aux_loss_coef"] = block["router_aux_loss_coef"]
    return overrides


def _parallelism(block: dict[str, Any]) -> ParallelismSettings:
    known = {f.name for f in fields(ParallelismSettings)}
    values = {k: v for k, v in _object(block, "parallelism").items() if k in known}
    return ParallelismSettings(**{k: v for k, v in values.items() if v is not None})


def _check(cfg: GrpoConfig) -> GrpoConfig:
    if cfg.temperature <= 0:
        msg = "`training.temperature` must be > 0: greedy groups are identical (no signal)"
        raise ConfigError(msg)
    if cfg.finetuning_type not in {"all_weights", "lora"}:
        msg = f"`training.finetuning_type` {cfg.finetuning_type!r}: use 'all_weights' or 'lora'"
        raise ConfigError(msg)
    if cfg.num_generations_per_prompt < 2:  # a group needs two samples
        msg = "`training.num_generations_per_prompt` must be >= 2 (the group is the signal)"
        raise ConfigError(msg)
    if not math.isfinite(cfg.batch_multiplier) or cfg.batch_multiplier < 1:
        msg = "`training.batch_multiplier` must be >= 1"
        raise ConfigError(msg)
    if cfg.batching.strategy not in {"dynamic", "static", "sequence_packing"}:
        msg = (
            f"`training.batching_strategy` {cfg.batching.strategy!r}: use 'dynamic', 'static' "
            "or 'sequence_packing'"
        )
        raise ConfigError(msg)
    if cfg.batching.mb_tokens < 1 or cfg.batching.sequence_length_round < 1:
        msg = "`training.train_mb_tokens` and `training.sequence_length_round` must be >= 1"
        raise ConfigError(msg)
    return cfg


def grpo_config(job_data: dict[str, Any]) -> GrpoConfig:
    """Typed settings from a job dict; unknown ``training`` keys are left to the validator.

    :raises ConfigError: when ``training`` is not an object or a value cannot train.
    """
    block = job_data.get("training") if isinstance(job_data, dict) else None
    if not isinstance(block, dict):
        msg = "job has no `training` object"
        raise ConfigError(msg)
    if block.get("type") != "grpo":
        msg = (
            f'`training.type` is {block.get("type")!r}; GRPO needs "grpo" '
            "(the platform rejects a missing type with union_tag_not_found, EK600)"
        )
        raise ConfigError(msg)
    top = {k: v for k, v in block.items() if k in _TOP_KEYS and v is not None}
    loss = LossConfig(**{k: v for k, v in block.items() if k in _LOSS_KEYS})
    try:
        cfg = GrpoConfig(
            **top,
            lora=_lora(block.get("lora")),
            loss=loss,
            batching=_batching(block),
            parallelism=_parallelism(block),
            hf_config_overrides=_hf_overrides(block),
            automodel_kwargs=dict(_object(block, "automodel_kwargs")),
        )
    except TypeError as exc:
        msg = f"`training` block: {exc}"
        raise ConfigError(msg) from None
    return _check(cfg)
