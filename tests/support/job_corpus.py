"""Generated GRPO jobs for the differential tests against the platform's own code.

``corpus()``: the minimal job (every default left out), the job with every field written out
at its default, that job with each field left out once, and one job per field with a
non-default value (with the companions the platform's rules need). ``mutated(n)``: seeded
mutations of the corpus: wrong types, out-of-range values, unknown keys, conflicting fields,
missing required keys.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Any

from envkit.model.jobspec import GrpoSettings

__all__ = ["BASE", "corpus", "mutated"]

BASE: dict[str, Any] = {
    "model": "default/qwen3-0.6b",
    "dataset": "default/train-data",
    "environment": "default/my-env",
    "training": {"type": "grpo"},
}


def _default_of(field: dataclasses.Field[Any]) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return dataclasses.asdict(field.default_factory())
    value = field.default
    return list(value) if isinstance(value, tuple) else value


def full_defaults() -> dict[str, Any]:
    """Every training field written out at its default (``type`` is required)."""
    training = {"type": "grpo"}
    for field in dataclasses.fields(GrpoSettings):
        if field.name != "type":
            training[field.name] = _default_of(field)
    return training


LORA = {"finetuning_type": "lora", "lora": {"rank": 8, "alpha": 16, "dropout": 0.05}}
DS = {"use_dynamic_sampling": True}

VARIANTS: list[dict[str, Any]] = [
    LORA,
    {**LORA, "lora": {"rank": 4, "target_modules": ["q_proj", "v_proj"], "use_triton": False}},
    {**LORA, "lora": {"exclude_modules": ["lm_head"]}, "policy_backend": "automodel"},
    {"policy_backend": "automodel", "v4_compatible": False},
    {"optimizer_type": "adamw_with_cosine_annealing", "warmup_steps": 3},
    {"optimizer_type": "adam_with_cosine_annealing", "min_learning_rate": 1e-6},
    {"optimizer_type": "adamw_with_flat_lr", "warmup_steps": 2},
    {"optimizer_type": "adam_with_flat_lr", "weight_decay": 0.0},
    {"learning_rate": 3e-5, "min_learning_rate": 3e-6, "warmup_steps": 5},
    {"adam_beta1": 0.8, "adam_beta2": 0.95, "adam_eps": 1e-8, "max_grad_norm": 0.5},
    {"epochs": 3, "max_steps": 4},
    {"epochs": 2, "val_check_interval": 0.5, "val_at_start": True},
    {"val_check_interval": 2, "val_at_end": False, "keep_top_k": 3},
    {"progress_reporting": {"min_report_interval_seconds": 0, "time_series_metrics": ["*"]}},
    {"batch_size": 16, "micro_batch_size": 2, "activation_checkpointing": True},
    {"max_seq_length": 1024, "max_new_tokens": 256, "seed": 7},
    {"parallelism": {"num_gpus_per_node": 8, "tensor_parallel_size": 2}, "batch_size": 64},
    {"execution_profile": "h100-large", "vllm_tensor_parallel_size": 1},
    {"num_generations_per_prompt": 4, "num_prompts_per_step": 16},
    {"num_generations_per_prompt": 5, "batch_size": 20},
    {"temperature": 0.7, "top_k": 20, "max_rollout_turns": 3},
    {"normalize_rewards": False, "use_leave_one_out_baseline": False},
    {"advantage_clip_low": -2.0, "advantage_clip_high": 2.0, "overlong_filtering": True},
    {"advantage_clip_high": 1.5},
    {"reward_shaping": {"stop_properly_penalty_coef": 0.5}},
    {"reward_shaping": {"overlong_buffer_length": 64, "overlong_buffer_penalty": 1.0,
                        "max_response_length": 512}},
    {"reward_scaling": {}},
    {"reward_scaling": {"target_min": -1.0, "source_max": 2.0}},
    {**DS, "batch_multiplier": 1.5, "dynamic_sampling_max_gen_batches": 4},
    {**DS, "batch_multiplier": 2.7},
    {"ref_policy_kl_penalty": 0.01, "use_on_policy_kl_approximation": False},
    {"ref_policy_kl_penalty": 0.05, "ratio_clip_min": 0.1, "ratio_clip_max": 0.3},
    {"ratio_clip_c": 3.0, "use_importance_sampling_correction": False},
    {"truncated_importance_sampling_type": "tis", "truncated_importance_sampling_ratio": 2.0},
    {"truncated_importance_sampling_type": "tis", "truncated_importance_sampling_ratio": 2.0,
     "truncated_importance_sampling_ratio_min": 0.5},
    {"truncated_importance_sampling_type": "icepop", "truncated_importance_sampling_ratio": 5.0,
     "truncated_importance_sampling_ratio_min": 0.5},
    {"truncated_importance_sampling_type": "seq-mask-tis",
     "truncated_importance_sampling_ratio": 1.002,
     "truncated_importance_sampling_ratio_min": 0.999},
    {"batching_strategy": "static"},
    {"batching_strategy": "sequence_packing", "train_mb_tokens": 4096},
    {"sequence_length_round": 128, "train_mb_tokens": 2048},
    {"policy_backend": "automodel", "automodel_kwargs": {"force_hf": True},
     "router_aux_loss_coef": 0.0},
    {"hf_config_overrides": {"text_config": {"router_aux_loss_coef": 0.0}}},
    {"vllm_gpu_memory_utilization": 0.7},
]  # fmt: skip


def corpus() -> list[dict[str, Any]]:
    """Valid jobs covering every training field; every default also left out once."""
    jobs = [copy.deepcopy(BASE)]
    full = full_defaults()
    jobs.append({**copy.deepcopy(BASE), "training": copy.deepcopy(full)})
    for name in full:
        if name != "type":
            training = {k: v for k, v in copy.deepcopy(full).items() if k != name}
            jobs.append({**copy.deepcopy(BASE), "training": training})
    for extra in VARIANTS:
        jobs.append({**copy.deepcopy(BASE), "training": {"type": "grpo", **copy.deepcopy(extra)}})
    return jobs


WRONG_TYPES: list[Any] = ["abc", [], {}, True, 1.5, "8", None, -1, 0, "true", 3]
UNKNOWN = [("training", "top_p"), ("training", "lr"), ("trainng",), ("training", "schedule"),
           ("training", "parallelism", "dp_size"), ("training", "lora", "r"), ("output", "x"),
           ("training", "reward_scaling", "scale")]  # fmt: skip
CONFLICTS: list[dict[str, Any]] = [
    {"min_learning_rate": 1e-3, "learning_rate": 1e-4},
    {"truncated_importance_sampling_type": "tis"},
    {"truncated_importance_sampling_type": "icepop", "truncated_importance_sampling_ratio": 5.0},
    {"truncated_importance_sampling_ratio": 2.0},
    {"truncated_importance_sampling_type": "tis", "truncated_importance_sampling_ratio": 2.0,
     "use_importance_sampling_correction": False},
    {"truncated_importance_sampling_type": "tis", "truncated_importance_sampling_ratio": 1.0,
     "truncated_importance_sampling_ratio_min": 2.0},
    {"batch_multiplier": 2.0},
    {"advantage_clip_low": 1.0, "advantage_clip_high": 1.0},
    {"max_new_tokens": 4096, "max_seq_length": 2048},
    {"train_mb_tokens": 1024},
    {"num_generations_per_prompt": 1},
    {"lora": {"rank": 8}},
    {"finetuning_type": "lora", "policy_backend": "dtensor"},
    {"policy_backend": "dtensor", "automodel_kwargs": {"x": 1}},
    {"automodel_kwargs": {"x": 1}},
    {"parallelism": {"expert_parallel_size": 2, "num_gpus_per_node": 2}},
    {"finetuning_type": "lora", "lora": {"use_triton": True},
     "parallelism": {"tensor_parallel_size": 2, "num_gpus_per_node": 2}},
    {"router_aux_loss_coef": 0.0, "hf_config_overrides": {"router_aux_loss_coef": 0.1}},
    {"batching_strategy": "sequence_packing",
     "parallelism": {"context_parallel_size": 2, "num_gpus_per_node": 2}},
    {"parallelism": {"context_parallel_size": 2, "sequence_parallel": True,
                     "tensor_parallel_size": 2, "num_gpus_per_node": 4}},
    {"reward_shaping": {"overlong_buffer_length": 64}},
    {"reward_shaping": {}},
    {"reward_shaping": {"stop_properly_penalty_coef": 0.5, "overlong_buffer_length": 8,
                        "overlong_buffer_penalty": 1.0, "max_response_length": 64}},
    {"reward_scaling": {"source_min": 1.0, "source_max": 1.0}},
    {"reward_scaling": {"target_min": 2.0}},
    {"batch_size": 30},
    {"batch_size": 12, "num_prompts_per_step": 5, "num_generations_per_prompt": 4},
    {"parallelism": {"tensor_parallel_size": 2}},
    {"parallelism": {"num_gpus_per_node": 4}, "batch_size": 6, "num_generations_per_prompt": 2},
    {"vllm_tensor_parallel_size": 2},
    {"micro_batch_size": 3},
]  # fmt: skip


def _set(job: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = job
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


def _mutate(job: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    job = copy.deepcopy(job)
    kind = rng.choice(["type", "type", "range", "unknown", "conflict", "conflict", "missing"])
    names = [f.name for f in dataclasses.fields(GrpoSettings) if f.name != "type"]
    if kind == "type":
        _set(job, ("training", rng.choice(names)), rng.choice(WRONG_TYPES))
    elif kind == "range":
        value = rng.choice([0, -1, -0.5, 1.0, 1.5, 2.5, 1e9, 0.999999, float("nan")])
        _set(job, ("training", rng.choice(names)), value)
    elif kind == "unknown":
        _set(job, rng.choice(UNKNOWN), 1)
    elif kind == "conflict":
        job["training"].update(copy.deepcopy(rng.choice(CONFLICTS)))
    else:
        path = rng.choice([("training", "type"), ("model",), ("environment",), ("training",)])
        node = job
        for key in path[:-1]:
            node = node[key]
        node.pop(path[-1], None)
    return job


def mutated(n: int, seed: int = 13) -> list[dict[str, Any]]:
    """``n`` seeded mutations of the corpus (some of them still valid)."""
    rng = random.Random(seed)
    base = corpus()
    return [_mutate(rng.choice(base), rng) for _ in range(n)]
