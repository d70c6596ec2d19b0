"""The GRPO job model: the one home of every job field's name, type, range and default.

Why here and only here: the same job JSON validates (``envkit validate --job``), trains
(``envkit train``) and submits, so ``validators/job/``, ``trainer/config.py`` and
``envkit schema job`` all read these dataclasses. Names, types, bounds and defaults follow the
platform's own job model (the ``rl`` job of NeMo Platform 0.6.0, "Key hyperparameters" and
"LoRA fields" in *GRPO and Reward Environments*); unknown keys are errors, as there.
Cross-field rules live in ``validators/job/cross_field.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from envkit.errors import InvalidError
from envkit.model._jobfields import Problem, json_schema, read_object, spec

__all__ = [
    "GrpoSettings",
    "JobSettings",
    "JobSpecError",
    "LoraSettings",
    "ParallelismSettings",
    "Problem",
    "ProgressReporting",
    "RewardScaling",
    "RewardShaping",
    "grpo_settings",
    "job_schema",
    "read_job",
]

OptimizerType = Literal[
    "adamw_with_cosine_annealing",
    "adam_with_cosine_annealing",
    "adamw_with_flat_lr",
    "adam_with_flat_lr",
]
TisType = Literal["tis", "icepop", "seq-mask-tis"]


class JobSpecError(InvalidError, ValueError):
    """The job cannot be read into the model; the message names the key path."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParallelismSettings:
    """How the platform lays the job over GPUs (``training.parallelism``)."""

    num_gpus_per_node: int = spec(1, gt=0, doc="GPUs per node.")
    num_nodes: int = spec(1, gt=0, doc="Nodes (more than 1: a multi-node Ray cluster).")
    tensor_parallel_size: int = spec(1, gt=0, doc="Tensor parallel size.")
    pipeline_parallel_size: int = spec(1, gt=0, doc="Pipeline parallel size.")
    context_parallel_size: int = spec(1, gt=0, doc="Context parallel size.")
    expert_parallel_size: int = spec(1, gt=0, doc="Expert parallel size (MoE, automodel only).")
    sequence_parallel: bool = spec(False, doc="Sequence parallelism.")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoraSettings:
    """LoRA adapter hyperparameters (``training.lora``); no merge at export."""

    rank: int = spec(16, gt=0, doc="LoRA rank r.")
    alpha: int = spec(32, gt=0, doc="Scaling; the adapter's effective LR multiplier is alpha/rank.")
    dropout: float = spec(0.0, ge=0.0, le=1.0, doc="LoRA dropout probability.")
    target_modules: tuple[str, ...] | None = spec(
        None, doc="Modules to adapt; unset: every linear layer."
    )
    exclude_modules: tuple[str, ...] | None = spec(None, doc="Module name patterns to leave alone.")
    use_triton: bool | None = spec(None, doc="Triton LoRA kernels; unset lets the compiler pick.")


@dataclass(frozen=True, slots=True, kw_only=True)
class RewardShaping:
    """DAPO reward shaping: penalise responses cut off by the generation cap."""

    overlong_buffer_length: int | None = spec(
        None, gt=0, doc="Tokens over which the penalty ramps in."
    )
    overlong_buffer_penalty: float | None = spec(
        None, ge=0.0, doc="Penalty at the end of the buffer."
    )
    max_response_length: int | None = spec(
        None, gt=0, doc="Length beyond which a response is penalised."
    )
    stop_properly_penalty_coef: float | None = spec(
        None, ge=0.0, le=1.0, doc="Scale on the reward of a truncated response (0 zeroes it)."
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class RewardScaling:
    """Linear reward rescaling: clamp to the source range, map onto the target range."""

    source_min: float = spec(0.0, doc="Low end of the incoming reward range.")
    source_max: float = spec(1.0, doc="High end of the incoming reward range.")
    target_min: float = spec(0.0, doc="Low end of the rescaled range.")
    target_max: float = spec(1.0, doc="High end of the rescaled range.")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressReporting:
    """How often the platform job reports progress (no effect on a local run)."""

    min_report_interval_seconds: float = spec(10.0, ge=0.0, doc="Least seconds between reports.")
    time_series_metrics: tuple[str, ...] | None = spec(None, doc="Metrics kept as a time series.")


@dataclass(frozen=True, slots=True, kw_only=True)
class GrpoSettings:
    """``training`` of an ``rl`` GRPO job."""

    type: Literal["grpo"] = spec(doc="The union discriminator; required.")
    finetuning_type: Literal["all_weights", "lora"] = spec(
        "all_weights", doc="Full weights or LoRA."
    )
    lora: LoraSettings | None = spec(None, doc="LoRA hyperparameters; defaults filled for lora.")
    policy_backend: Literal["dtensor", "automodel"] | None = spec(
        None, doc="Unset: automodel for lora, dtensor for all_weights."
    )
    v4_compatible: bool = spec(True, doc="Export a transformers-v4 config (platform export).")
    # optimizer and schedule
    optimizer_type: OptimizerType | None = spec(None, doc="Unset: adamw_with_cosine_annealing.")
    learning_rate: float = spec(1e-4, gt=0.0, doc="Peak learning rate.")
    min_learning_rate: float | None = spec(None, ge=0.0, doc="Cosine floor; unset decays to 0.")
    weight_decay: float = spec(0.01, ge=0.0, doc="Weight decay (also passed to Adam).")
    adam_beta1: float = spec(0.9, ge=0.0, lt=1.0, doc="Adam beta1.")
    adam_beta2: float = spec(0.999, ge=0.0, lt=1.0, doc="Adam beta2.")
    adam_eps: float = spec(1e-5, gt=0.0, doc="Adam epsilon.")
    warmup_steps: int = spec(0, ge=0, doc="Linear warmup steps (at least 1 is scheduled).")
    max_grad_norm: float = spec(1.0, ge=0.0, doc="Gradient-norm clip.")
    epochs: int = spec(1, gt=0, doc="Passes over the training rows.")
    max_steps: int | None = spec(None, gt=0, doc="Cap on GRPO steps (smoke tests).")
    val_check_interval: float | None = spec(
        None, ge=0.0, doc="<= 1: fraction of an epoch; > 1: steps between validations."
    )
    val_at_start: bool = spec(False, doc="Validate before the first step.")
    val_at_end: bool = spec(True, doc="Validate after the last step.")
    progress_reporting: ProgressReporting = spec(
        factory=ProgressReporting, doc="Platform reporting."
    )
    keep_top_k: int = spec(1, gt=0, doc="Best checkpoints kept.")
    # batch
    batch_size: int = spec(32, gt=0, doc="Rollouts per optimizer step (train_global_batch_size).")
    micro_batch_size: int = spec(1, gt=0, doc="Rollouts per micro-batch.")
    activation_checkpointing: bool = spec(False, doc="Recompute activations in the backward pass.")
    max_seq_length: int = spec(2048, gt=0, doc="Prompt + response token budget.")
    seed: int | None = spec(None, doc="Random seed; unset compiles to 42.")
    parallelism: ParallelismSettings = spec(factory=ParallelismSettings, doc="GPU layout.")
    execution_profile: str | None = spec(None, min_length=1, doc="Operator execution profile.")
    # generation
    num_generations_per_prompt: int = spec(8, gt=0, doc="Group size G.")
    num_prompts_per_step: int | None = spec(None, gt=0, doc="Unset: max(batch_size // G, 1).")
    temperature: float = spec(1.0, gt=0.0, le=2.0, doc="Sampling temperature (> 0).")
    max_new_tokens: int | None = spec(None, gt=0, doc="Unset: max_seq_length.")
    top_k: int | None = spec(None, gt=0, doc="Sample from the k likeliest tokens; unset: all.")
    max_rollout_turns: int = spec(1, gt=0, doc="Agent turns per rollout.")
    # advantages and rewards
    normalize_rewards: bool = spec(True, doc="Divide advantages by the group's std.")
    use_leave_one_out_baseline: bool = spec(True, doc="Baseline = mean of the other samples.")
    advantage_clip_low: float | None = spec(None, doc="Lower bound on normalised advantages.")
    advantage_clip_high: float | None = spec(None, doc="Upper bound on normalised advantages.")
    overlong_filtering: bool = spec(False, doc="Zero the loss of truncated rollouts.")
    reward_shaping: RewardShaping | None = spec(None, doc="DAPO penalties; unset: off.")
    reward_scaling: RewardScaling | None = spec(None, doc="Linear rescale; unset: off.")
    use_dynamic_sampling: bool = spec(False, doc="Keep only samples whose group rewards differ.")
    dynamic_sampling_max_gen_batches: int = spec(10, gt=0, doc="Generation batches per step.")
    batch_multiplier: float = spec(1.0, ge=1.0, doc="Over-generation factor (dynamic sampling).")
    # loss
    ref_policy_kl_penalty: float = spec(0.0, ge=0.0, doc="k3 KL coefficient.")
    ratio_clip_min: float = spec(0.2, ge=0.0, doc="Lower PPO ratio clip.")
    ratio_clip_max: float = spec(0.28, ge=0.0, doc="Upper PPO ratio clip.")
    ratio_clip_c: float | None = spec(None, gt=1.0, doc="Dual-clip bound; unset: off.")
    use_on_policy_kl_approximation: bool = spec(True, doc="KL against the generating policy.")
    use_importance_sampling_correction: bool = spec(True, doc="Weight tokens by pi_train/pi_gen.")
    truncated_importance_sampling_type: TisType | None = spec(
        None, doc="Bound IS weights; unset: off."
    )
    truncated_importance_sampling_ratio: float | None = spec(None, gt=0.0, doc="Upper IS bound.")
    truncated_importance_sampling_ratio_min: float | None = spec(
        None, ge=0.0, doc="Lower IS bound."
    )
    # micro-batches and backend
    batching_strategy: Literal["static", "dynamic", "sequence_packing"] = spec(
        "dynamic", doc="How rollouts become micro-batches."
    )
    train_mb_tokens: int | None = spec(None, gt=0, doc="Token budget per micro-batch.")
    sequence_length_round: int = spec(64, gt=0, doc="Round dynamic micro-batch lengths up.")
    automodel_kwargs: Mapping[str, Any] | None = spec(None, doc="Automodel passthrough.")
    router_aux_loss_coef: float | None = spec(None, ge=0.0, doc="MoE router aux-loss coefficient.")
    hf_config_overrides: Mapping[str, Any] | None = spec(None, doc="HF config overrides.")
    vllm_tensor_parallel_size: int | None = spec(None, gt=0, doc="vLLM engine TP size.")
    vllm_gpu_memory_utilization: float = spec(0.5, gt=0.0, le=1.0, doc="vLLM GPU memory share.")

    @property
    def prompts_per_step(self) -> int:
        """``num_prompts_per_step``, else ``max(batch_size // G, 1)`` as the compiler derives."""
        if self.num_prompts_per_step is not None:
            return self.num_prompts_per_step
        return max(self.batch_size // max(self.num_generations_per_prompt, 1), 1)

    @property
    def mb_tokens(self) -> int:
        """``train_mb_tokens``, else ``max_seq_length * micro_batch_size``."""
        return self.train_mb_tokens or self.max_seq_length * self.micro_batch_size

    @property
    def backend(self) -> str:
        """``policy_backend``, else the one that supports the finetuning type."""
        if self.policy_backend is not None:
            return self.policy_backend
        return "automodel" if self.finetuning_type == "lora" else "dtensor"


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputRequest:
    """Where the platform writes the result; ``name`` is derived when omitted."""

    name: str | None = spec(None, max_length=255, doc="Output name.")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSettings:
    """The job JSON `nemo customization rl submit` takes for GRPO."""

    name: str | None = spec(None, doc="Job name.")
    model: str = spec(doc="Model entity `workspace/name` (or a local path with `envkit train`).")
    dataset: str = spec(doc="Dataset FileSet with training.jsonl (+ validation.jsonl).")
    environment: str | None = spec(None, doc="Environment FileSet; required for GRPO.")
    training: GrpoSettings = spec(doc="Training method and hyperparameters.")
    integrations: Mapping[str, Any] | None = spec(None, doc="MLflow / W&B integrations.")
    output: OutputRequest | None = spec(None, doc="Output preferences.")


def read_job(data: Any) -> tuple[JobSettings | None, list[Problem]]:
    """The whole job, or None with the problems that stop it (converted values are warnings)."""
    return read_object(JobSettings, data, ())


def grpo_settings(job_data: Mapping[str, Any]) -> GrpoSettings:
    """``job_data["training"]`` as :class:`GrpoSettings`, LoRA defaults filled in.

    :raises JobSpecError: the block is missing or a field has the wrong type or range.
    """
    training = job_data.get("training") if isinstance(job_data, Mapping) else None
    settings, problems = read_object(GrpoSettings, training, ("training",))
    errors = [p for p in problems if p.kind != "converted"]
    if settings is None or errors:
        first = errors[0] if errors else Problem(("training",), "type", "`training` is missing")
        where = ".".join(first.path)
        text = first.message if first.message.startswith("`") else f"`{where}` {first.message}"
        msg = f"{text} (run `envkit validate --job` for every problem)"
        raise JobSpecError(msg)
    if settings.finetuning_type == "lora" and settings.lora is None:
        settings = dataclasses.replace(settings, lora=LoraSettings())
    return settings


def job_schema() -> dict[str, Any]:
    """``envkit schema job``: the JSON Schema generated from :class:`JobSettings`."""
    schema = json_schema(JobSettings)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://envkit.dev/schemas/job.schema.json",
        "title": "NeMo Platform rl GRPO job",
        **schema,
        "description": (
            "The job JSON `nemo customization rl submit` takes for GRPO, generated from envkit's "
            "job model (envkit/model/jobspec.py). Unknown keys are errors, as on the platform. "
            "Cross-field rules are checked by `envkit validate --job`."
        ),
    }
