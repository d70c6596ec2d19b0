"""The GRPO loop: generate -> score -> advantages -> loss -> optimizer step -> refresh.

Why this shape: each step reads on one screen (:func:`_step`). Every step reseeds torch from
``(seed, step)`` and hands the rollout source a seed for each sample's generator (``seeds.py``),
so a resumed run draws exactly the samples an uninterrupted one would, whatever order Gym's
concurrent requests reach the policy server in.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from envkit.trainer.advantages import clip_advantages, compute_advantages
from envkit.trainer.batch import MicroBatch, build_microbatch
from envkit.trainer.checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    prune,
    save_checkpoint,
)
from envkit.trainer.dynamic_sampling import (
    DynamicSamplingError,
    Sampled,
    groups_of,
    sample_step,
    train_metrics,
)
from envkit.trainer.loss import LossOutput, grpo_loss
from envkit.trainer.metrics import MetricsLogger
from envkit.trainer.microbatch import plan_microbatches
from envkit.trainer.nemo_config import announce_not_applied
from envkit.trainer.optim import make_optimizer, make_scheduler
from envkit.trainer.policy import announce_backend, model_mode, token_logprobs
from envkit.trainer.sampler import PromptSampler
from envkit.trainer.seeds import SALT_GENERATION, SALT_VALIDATION, step_seed
from envkit.trainer.sources.base import RolloutFailedError

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.gym import Rollout
    from envkit.trainer.config import GrpoConfig
    from envkit.trainer.policy import Policy
    from envkit.trainer.sources.base import GenerationSource

__all__ = [
    "DynamicSamplingError",
    "RolloutFailedError",
    "TrainOptions",
    "TrainResult",
    "train",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TrainOptions:
    output: Path
    resume: bool = False
    save_period: int = 10
    max_rollout_retries: int = 2
    stop_after: int | None = None  # stop (as if killed) after this step's checkpoint


@dataclass
class TrainResult:
    steps: int
    final_dir: Path
    metrics_path: Path
    final_metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class _Run:
    cfg: GrpoConfig
    policy: Policy
    source: GenerationSource
    sampler: PromptSampler
    optimizer: torch.optim.Optimizer
    scheduler: Any
    reference: Any
    opts: TrainOptions


def _reseed(seed: int, step: int, salt: int = SALT_GENERATION) -> int:
    """Reseed torch for this step's draws; returns the step's seed for the rollout source."""
    value = step_seed(seed, step, salt)
    torch.manual_seed(value)
    return value


def _generate_with_retry(
    run: _Run, rows: list[dict[str, Any]], first_group: int, seed: int
) -> list[Rollout]:
    """One generation batch; a recoverable failure restarts the source and redoes the batch
    with the same seeds (the retried batch samples what the first try would have)."""
    rng = torch.get_rng_state()
    for attempt in range(run.opts.max_rollout_retries + 1):
        try:
            return run.source.rollouts(
                rows, run.cfg.training.num_generations_per_prompt, first_group=first_group,
                seed=seed,
            )
        except RolloutFailedError as exc:
            if attempt == run.opts.max_rollout_retries:
                raise
            log.warning("rollout failed (%s); restarting the source and retrying", exc)
            run.source.restart()
            torch.set_rng_state(rng)
    raise AssertionError  # unreachable: the loop returns or raises


def _sample(run: _Run, seed: int) -> Sampled:
    """The step's samples (``dynamic_sampling.sample_step``) from this run's prompts.

    A rollout that failed (a timeout, an error the agent reported) is a failure, not a reward:
    it is counted in ``Sampled.failed`` and left out; its group trains on the samples it has.
    """
    failed: list[Rollout] = []

    def generate(num_prompts: int, first_group: int) -> list[Rollout]:
        rows = [row for _, row in run.sampler.take(num_prompts)]
        rollouts = _generate_with_retry(run, rows, first_group, seed)
        failed.extend(r for r in rollouts if not r.ok)
        return [r for r in rollouts if r.ok]

    sampled = sample_step(run.cfg, generate)
    sampled.failed = len(failed)
    return sampled


def _logprobs(model: Any, mb: MicroBatch, temperature: float) -> torch.Tensor:
    return token_logprobs(model, mb.input_ids, mb.attention_mask, temperature, mb.position_ids)


def _no_grad_logprobs(run: _Run, mb: MicroBatch, reference: bool) -> torch.Tensor:
    """Old-policy (or reference) logprobs, in eval mode as NeMo-RL's ``get_logprobs``."""
    with torch.no_grad(), model_mode(run.policy.model, training=False):
        if not reference:
            return _logprobs(run.policy.model, mb, run.cfg.training.temperature)
        if run.policy.is_lora:  # the frozen base: the adapter switched off
            with run.policy.model.disable_adapter():
                return _logprobs(run.policy.model, mb, run.cfg.training.temperature)
        return _logprobs(run.reference, mb, run.cfg.training.temperature)


def _microbatches(run: _Run, rollouts: list[Rollout], advantages: torch.Tensor) -> list[MicroBatch]:
    """The step's rollouts laid out by ``batching_strategy`` (``microbatch.py``)."""
    cfg = run.cfg
    lengths = [len(r.prompt_ids) + len(r.completion_ids) for r in rollouts]
    plans = plan_microbatches(lengths, cfg.batching, cfg.training.micro_batch_size)
    pad = run.policy.tokenizer.pad_token_id
    device = next(run.policy.model.parameters()).device
    return [
        build_microbatch(
            rollouts, advantages, p, pad, overlong_filtering=cfg.training.overlong_filtering
        ).to(device)
        for p in plans
    ]


def _microbatch_loss(run: _Run, mb: MicroBatch, tokens: float) -> LossOutput:
    """Loss of one micro-batch, normalised by the whole step's ``tokens``."""
    cfg = run.cfg
    prev = _no_grad_logprobs(run, mb, reference=False)
    use_ref = cfg.loss.ref_policy_kl_penalty > 0
    ref = _no_grad_logprobs(run, mb, reference=True) if use_ref else None
    # train mode for the gradient pass: activation checkpointing only runs in it
    with model_mode(run.policy.model, training=True):
        curr = _logprobs(run.policy.model, mb, cfg.training.temperature)
    return grpo_loss(
        curr,
        prev,
        mb.generation_logprobs,
        mb.advantages,
        mb.loss_mask,
        cfg.loss,
        ref_logprobs=ref,
        global_tokens=max(tokens, 1.0),
    )


def _update(run: _Run, rollouts: list[Rollout], advantages: torch.Tensor) -> dict[str, float]:
    """``rollouts / batch_size`` optimizer steps, each normalised by its own token count; the
    scheduler steps once afterwards. A step short of rollouts (some failed) trains what it has:
    its last optimizer step takes the remainder."""
    size = run.cfg.training.batch_size
    chunks = [slice(i, i + size) for i in range(0, max(len(rollouts), 1), size)]
    totals: dict[str, float] = {}
    for chunk in chunks:
        for name, value in _one_update(run, rollouts[chunk], advantages[chunk]).items():
            totals[name] = totals.get(name, 0.0) + value / len(chunks)
    totals["lr"] = run.optimizer.param_groups[0]["lr"]
    totals["optimizer_steps"] = float(len(chunks))
    run.scheduler.step()
    return totals


def _one_update(run: _Run, rollouts: list[Rollout], advantages: torch.Tensor) -> dict[str, float]:
    """One optimizer step over micro-batches; the loss is normalised by these rollouts' tokens."""
    mbs = _microbatches(run, rollouts, advantages)
    tokens = sum(float(mb.loss_mask.sum()) for mb in mbs)
    run.optimizer.zero_grad(set_to_none=True)
    totals: dict[str, float] = {"loss": 0.0}
    for mb in mbs:
        out = _microbatch_loss(run, mb, tokens)
        if tokens > 0:
            out.loss.backward()  # type: ignore[no-untyped-call]
        share = float(mb.loss_mask.sum()) / max(tokens, 1.0)
        totals["loss"] += float(out.loss.detach())
        for name, value in out.metrics.items():
            totals[name] = totals.get(name, 0.0) + value * share
    params = [p for p in run.policy.model.parameters() if p.requires_grad]
    norm = torch.nn.utils.clip_grad_norm_(params, run.cfg.training.max_grad_norm)
    totals["grad_norm"] = float(norm)
    run.optimizer.step()
    return {**totals, **_layout_metrics(mbs)}


def _layout_metrics(mbs: list[MicroBatch]) -> dict[str, float]:
    """How the strategy laid the step out: micro-batch count, share of padded positions."""
    padded = sum(mb.input_ids.numel() for mb in mbs)
    real = sum(mb.real_tokens for mb in mbs)
    return {"num_microbatches": float(len(mbs)), "padding_fraction": 1.0 - real / max(padded, 1)}


def _step(run: _Run, step: int) -> dict[str, float]:
    """generate -> score -> advantages -> loss -> optimizer steps -> refresh generation."""
    started = time.perf_counter()
    cfg = run.cfg
    seed = _reseed(cfg.seed, step)
    sampled = _sample(run, seed)  # generate + score (the source scores), dynamic sampling
    generated_at = time.perf_counter()
    advantages = compute_advantages(  # recomputed on the kept batch, as NeMo-RL does
        groups_of(sampled.rollouts),
        sampled.rewards,
        leave_one_out=cfg.training.use_leave_one_out_baseline,
        normalize=cfg.training.normalize_rewards,
    )
    advantages = clip_advantages(
        advantages, cfg.training.advantage_clip_low, cfg.training.advantage_clip_high
    )
    run.source.sleep()  # colocated: the engine frees the device while the trainer trains
    update = _update(run, sampled.rollouts, advantages)
    refit = run.source.refresh(run.policy)  # wake, refit, probe check; RefitError stops here
    metrics = train_metrics(sampled, advantages)
    metrics.update({f"train_{k}": v for k, v in {**update, **(refit or {})}.items()})
    metrics["train_failed_rollouts"] = float(sampled.failed)
    if cfg.training.use_dynamic_sampling:
        metrics["train_dynamic_sampling_num_gen_batches"] = float(sampled.gen_batches)
        metrics["train_dynamic_sampling_num_discarded_valid_samples"] = float(sampled.discarded)
    metrics["train_timing/generation"] = generated_at - started
    metrics["train_timing/total_step_time"] = time.perf_counter() - started
    return metrics


def _validate(run: _Run, val_rows: list[dict[str, Any]], step: int) -> dict[str, float]:
    """``val_accuracy``: mean reward of one sample per validation row (NeMo-RL's name), over
    the rows that finished; the failed ones are ``val_failed_rollouts``, never a reward."""
    if not val_rows:
        return {}
    seed = _reseed(run.cfg.seed, step, salt=SALT_VALIDATION)
    rewards = [r.reward for r in run.source.rollouts(val_rows, 1, seed=seed) if r.ok]
    scored = [reward for reward in rewards if reward is not None]
    metrics = {"val_failed_rollouts": float(len(val_rows) - len(scored))}
    if scored:
        metrics["val_accuracy"] = sum(scored) / len(scored)
    return metrics


def _build_run(
    cfg: GrpoConfig,
    policy: Policy,
    source: GenerationSource,
    rows: list[dict[str, Any]],
    opts: TrainOptions,
) -> tuple[_Run, int]:
    torch.manual_seed(cfg.seed)
    announce_backend(cfg)
    for line in announce_not_applied(cfg):
        log.warning(line)
    optimizer = make_optimizer(policy.model.parameters(), cfg)
    scheduler = make_scheduler(optimizer, cfg, cfg.total_steps(len(rows)))
    needs_ref = cfg.loss.ref_policy_kl_penalty > 0 and not policy.is_lora
    reference = copy.deepcopy(policy.model).eval() if needs_ref else None
    sampler = PromptSampler(rows)
    run = _Run(cfg, policy, source, sampler, optimizer, scheduler, reference, opts)
    ckpt = latest_checkpoint(opts.output / "checkpoints") if opts.resume else None
    if ckpt is None:
        return run, 0
    run.sampler.state = load_checkpoint(ckpt, policy, optimizer, scheduler)
    source.refresh(policy)
    log.info("resumed from %s (step %d)", ckpt.path, ckpt.step)
    return run, ckpt.step


def _checkpoint(run: _Run, step: int, metrics: dict[str, float]) -> None:
    metric = metrics.get("val_accuracy", metrics.get("train_reward"))
    root = run.opts.output / "checkpoints"
    save_checkpoint(root, step, run.policy, run.optimizer, run.scheduler, run.sampler.state, metric)
    prune(root, run.cfg.training.keep_top_k)


def _is_val_step(cfg: GrpoConfig, period: int, step: int, total: int) -> bool:
    """Every ``period`` steps (the compiled ``val_check_interval``) and at the end."""
    return bool(period and step % period == 0) or (cfg.training.val_at_end and step == total)


def train(
    cfg: GrpoConfig,
    policy: Policy,
    source: GenerationSource,
    rows: list[dict[str, Any]],
    opts: TrainOptions,
    val_rows: list[dict[str, Any]] | None = None,
) -> TrainResult:
    """Run GRPO to ``total_steps``; writes metrics, checkpoints and the final policy dir.

    :raises DynamicSamplingError: dynamic sampling exhausted its generation batches.
    :raises RolloutFailedError: the source kept failing after ``max_rollout_retries``.
    """
    val_rows = val_rows or []
    total = cfg.total_steps(len(rows))
    run, done = _build_run(cfg, policy, source, rows, opts)
    logger = MetricsLogger(opts.output)
    logger.truncate_after(done)
    if done == 0 and cfg.training.val_at_start:
        logger.log(0, _validate(run, val_rows, 0))
    metrics: dict[str, float] = {}
    for step in range(done + 1, total + 1):
        metrics = _step(run, step)
        if _is_val_step(cfg, cfg.val_period(len(rows)), step, total):
            metrics.update(_validate(run, val_rows, step))
        logger.log(step, metrics)
        log.info(_progress_line(step, total, metrics))
        if step % opts.save_period == 0 or step == total:
            _checkpoint(run, step, metrics)
        if opts.stop_after is not None and step >= opts.stop_after:
            return TrainResult(step, opts.output / "final", logger.path, metrics)
    return _finish(run, logger, total, metrics)


def _progress_line(step: int, total: int, m: dict[str, float]) -> str:
    val = f" val_accuracy={m['val_accuracy']:.3f}" if "val_accuracy" in m else ""
    return (
        f"step {step}/{total} train_reward={m['train_reward']:.3f} "
        f"pct_mixed={m['train_baseline_reward/pct_mixed']:.2f} loss={m['train_loss']:+.4f} "
        f"{m['train_timing/total_step_time']:.1f}s{val}"
    )


def _finish(run: _Run, logger: MetricsLogger, total: int, metrics: dict[str, float]) -> TrainResult:
    final = run.opts.output / "final"
    run.policy.save(final)
    logger.close()
    summary = {"step": total, **metrics}
    (run.opts.output / "final_metrics.json").write_text(
        json.dumps(summary, indent=2), encoding="utf-8"
    )
    return TrainResult(total, final, logger.path, metrics)
