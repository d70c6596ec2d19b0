"""GRPO policy loss: NeMo-RL's clipped surrogate with dual clip, k3 KL and truncated IS.

Why token-level: NeMo-RL's ``ClippedPGLossFn`` averages over every valid token of the global
batch (``masked_mean`` with a global normaliser), so long and short responses weigh per token.
Micro-batches pass ``global_tokens`` so their gradients add up to the full-batch loss.
All tensors are (b, s) over response tokens unless stated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

__all__ = [
    "LossConfig",
    "LossOutput",
    "clipped_surrogate",
    "grpo_loss",
    "importance_weights",
    "k3_kl",
    "masked_mean",
    "token_mask_without_overlong",
]


@dataclass(frozen=True)
class LossConfig:
    """The loss knobs of the job's ``training`` block (seed 000 / NeMo-RL names)."""

    ratio_clip_min: float = 0.2
    ratio_clip_max: float = 0.2
    ratio_clip_c: float | None = None
    ref_policy_kl_penalty: float = 0.0
    use_importance_sampling_correction: bool = False
    truncated_importance_sampling_type: str | None = None  # "tis" caps the IS weight
    truncated_importance_sampling_ratio: float | None = None


class LossOutput(NamedTuple):
    loss: torch.Tensor
    metrics: dict[str, float]


def masked_mean(
    values: torch.Tensor, mask: torch.Tensor, global_tokens: float | torch.Tensor | None = None
) -> torch.Tensor:
    """sum(values * mask) / (normaliser + 1e-8); normaliser = mask.sum() unless given."""
    norm = mask.sum() if global_tokens is None else global_tokens
    return (values * mask).sum() / (norm + 1e-8)


def k3_kl(
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    clamp_in: float = 20.0,
    clamp_out: float = 10.0,
) -> torch.Tensor:
    """Schulman's k3 estimator exp(r) - 1 - r, r = ref - cur, clamped as NeMo-RL does. (b, s)."""
    logr = (ref_logprobs - logprobs).clamp(-clamp_in, clamp_in)
    return (logr.exp() - 1 - logr).clamp(-clamp_out, clamp_out)


def clipped_surrogate(
    ratio: torch.Tensor, advantages: torch.Tensor, cfg: LossConfig
) -> torch.Tensor:
    """Per-token PPO loss max(-A r, -A clip(r)), dual-clipped at -A c for A < 0. (b, s).

    Dual clip (Ye et al. 2020) bounds the loss of a negative-advantage token whose ratio
    exploded, which plain clipping leaves unbounded.
    """
    clipped = ratio.clamp(1 - cfg.ratio_clip_min, 1 + cfg.ratio_clip_max)
    loss = torch.maximum(-advantages * ratio, -advantages * clipped)
    if cfg.ratio_clip_c is not None:
        dual = -advantages * cfg.ratio_clip_c
        loss = torch.where(advantages < 0, torch.minimum(loss, dual), loss)
    return loss


def importance_weights(
    prev_logprobs: torch.Tensor, generation_logprobs: torch.Tensor, cfg: LossConfig
) -> torch.Tensor:
    """pi_train / pi_gen per token, capped at the TIS ratio; ones when correction is off. (b, s).

    The generation engine (vLLM, a served HF model) and the trainer compute slightly different
    probabilities for the same token; the weight corrects the surrogate for that drift.
    """
    if not cfg.use_importance_sampling_correction:
        return torch.ones_like(prev_logprobs)
    weights = (prev_logprobs - generation_logprobs).exp()
    if cfg.truncated_importance_sampling_type == "tis":
        cap = cfg.truncated_importance_sampling_ratio or 2.0
        weights = weights.clamp(max=cap)
    return weights.detach()


def token_mask_without_overlong(
    token_mask: torch.Tensor, truncated: torch.Tensor, *, overlong_filtering: bool
) -> torch.Tensor:
    """Zero the loss mask of responses cut at the generation cap. (b, s), (b,) -> (b, s)."""
    if not overlong_filtering:
        return token_mask
    return token_mask * (~truncated.bool()).to(token_mask.dtype).unsqueeze(-1)


def _drift_metrics(
    curr: torch.Tensor, prev: torch.Tensor, gen: torch.Tensor, mask: torch.Tensor, w: torch.Tensor
) -> dict[str, float]:
    with torch.no_grad():
        mult_err = masked_mean(((gen - prev).abs() * mask).exp(), mask)
        entropy = -masked_mean((curr - gen).exp() * curr, mask)
        return {
            "token_mult_prob_error": float(mult_err),
            "approx_entropy": float(entropy),
            "sampling_importance_ratio": float(masked_mean(w, mask)),
        }


def grpo_loss(
    curr_logprobs: torch.Tensor,
    prev_logprobs: torch.Tensor,
    generation_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    token_mask: torch.Tensor,
    cfg: LossConfig,
    *,
    ref_logprobs: torch.Tensor | None = None,
    global_tokens: float | None = None,
) -> LossOutput:
    """Token-level GRPO loss. Logprob tensors and mask (b, s); advantages (b,) or (b, s).

    ``prev_logprobs`` are the trainer's logprobs before the update (the ratio's denominator);
    ``generation_logprobs`` come from the sampler and drive importance sampling only.
    """
    adv = advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages
    ratio = (curr_logprobs - prev_logprobs).exp()
    weights = importance_weights(prev_logprobs, generation_logprobs, cfg)
    per_token = weights * clipped_surrogate(ratio, adv, cfg)
    kl_value = torch.zeros((), device=curr_logprobs.device)
    if cfg.ref_policy_kl_penalty > 0:
        if ref_logprobs is None:
            msg = "ref_policy_kl_penalty > 0 needs ref_logprobs"
            raise ValueError(msg)
        kl = weights * k3_kl(curr_logprobs, ref_logprobs)
        per_token = per_token + cfg.ref_policy_kl_penalty * kl
        kl_value = masked_mean(kl.detach(), token_mask)
    loss = masked_mean(per_token, token_mask, global_tokens)
    metrics = _drift_metrics(curr_logprobs, prev_logprobs, generation_logprobs, token_mask, weights)
    metrics["kl_penalty"] = float(kl_value)
    clamped = (ratio < 1 - cfg.ratio_clip_min) | (ratio > 1 + cfg.ratio_clip_max)
    metrics["probs_ratio_clamped_fraction"] = float(masked_mean(clamped.float(), token_mask))
    return LossOutput(loss, metrics)
