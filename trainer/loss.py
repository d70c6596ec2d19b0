"""GRPO policy loss: NeMo-RL's clipped surrogate with dual clip, weighted k3 KL and truncated IS.

Why token-level: NeMo-RL's ``ClippedPGLossFn`` averages over every valid token of the global
batch (``masked_mean`` with a global normaliser), so long and short responses weigh per token.
Micro-batches pass ``global_tokens`` so their gradients add up to the full-batch loss.
All tensors are (b, s) over response tokens unless stated.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from envkit.model.jobspec import GrpoSettings

__all__ = [
    "LossConfig",
    "LossOutput",
    "clipped_surrogate",
    "grpo_loss",
    "importance_weights",
    "k3_kl",
    "kl_weights",
    "masked_mean",
]


_JOB_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(GrpoSettings)}


@dataclass(frozen=True, slots=True)
class LossConfig:
    """The loss fields of the job (names and defaults from ``envkit.model.jobspec``)."""

    ratio_clip_min: float = _JOB_DEFAULTS["ratio_clip_min"]
    ratio_clip_max: float = _JOB_DEFAULTS["ratio_clip_max"]
    ratio_clip_c: float | None = _JOB_DEFAULTS["ratio_clip_c"]
    ref_policy_kl_penalty: float = _JOB_DEFAULTS["ref_policy_kl_penalty"]
    use_on_policy_kl_approximation: bool = _JOB_DEFAULTS["use_on_policy_kl_approximation"]
    use_importance_sampling_correction: bool = _JOB_DEFAULTS["use_importance_sampling_correction"]
    truncated_importance_sampling_type: str | None = _JOB_DEFAULTS[
        "truncated_importance_sampling_type"
    ]
    truncated_importance_sampling_ratio: float | None = _JOB_DEFAULTS[
        "truncated_importance_sampling_ratio"
    ]
    truncated_importance_sampling_ratio_min: float | None = _JOB_DEFAULTS[
        "truncated_importance_sampling_ratio_min"
    ]


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
    weights: torch.Tensor | None = None,
    clamp_in: float = 20.0,
    clamp_out: float = 10.0,
) -> torch.Tensor:
    """Schulman's k3 estimator exp(r) - 1 - r, r = ref - cur, as NeMo-RL's ``calculate_kl``.

    ``weights`` multiply the KL before the output clamp; where the input clamp bites, the
    weight is detached so the clamp stops both gradients. (b, s).
    """
    logr = ref_logprobs - logprobs
    clamped = logr.clamp(-clamp_in, clamp_in)
    kl = clamped.exp() - 1 - clamped
    if weights is not None:
        kl = torch.where(logr == clamped, weights, weights.detach()) * kl
    return kl.clamp(-clamp_out, clamp_out)


def kl_weights(
    curr_logprobs: torch.Tensor, generation_logprobs: torch.Tensor, *, on_policy: bool
) -> torch.Tensor:
    """KL gradient weights: exp(cur - gen) (on-policy approximation) or exp(cur - sg(cur)).

    The second is 1 in value but carries the score-function gradient; NaN/inf become 0. (b, s).
    """
    base = generation_logprobs if on_policy else curr_logprobs.detach()
    return torch.nan_to_num((curr_logprobs - base).exp(), nan=0.0, posinf=0.0, neginf=0.0)


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
    prev_logprobs: torch.Tensor,
    generation_logprobs: torch.Tensor,
    cfg: LossConfig,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """pi_train / pi_gen per token (NaN/inf -> 0), bounded by the TIS type. (b, s).

    ``tis`` clamps into [ratio_min or 0, ratio]; ``icepop`` zeroes tokens outside
    [ratio_min, ratio]; ``seq-mask-tis`` zeroes whole sequences whose geometric-mean ratio over
    ``mask`` is outside it. The weights are always computed (``sampling_importance_ratio``
    reports them); the loss applies them only with ``use_importance_sampling_correction``.
    """
    log_ratio = prev_logprobs - generation_logprobs
    weights = torch.nan_to_num(log_ratio.exp(), nan=0.0, posinf=0.0, neginf=0.0).detach()
    kind, high = cfg.truncated_importance_sampling_type, cfg.truncated_importance_sampling_ratio
    if kind is None or high is None:
        return weights
    low = cfg.truncated_importance_sampling_ratio_min
    if kind == "tis":
        return weights.clamp(min=low or 0.0, max=high)
    low = 0.0 if low is None else low  # unset: no lower bound below zero, as for ``tis``
    if kind == "icepop":
        return torch.where((weights >= low) & (weights <= high), weights, 0.0)
    seq_mask = torch.ones_like(weights) if mask is None else mask
    finite = torch.nan_to_num(log_ratio, nan=0.0, posinf=0.0, neginf=0.0)
    geo = masked_mean_rows(finite, seq_mask).exp()
    return weights * ((geo >= low) & (geo <= high)).to(weights.dtype).unsqueeze(-1)


def masked_mean_rows(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-row masked mean. (b, s) -> (b,)."""
    return (values * mask).sum(-1) / (mask.sum(-1) + 1e-8)


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
    The KL term is not multiplied by the IS weights (NeMo-RL adds it separately).
    """
    adv = advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages
    ratio = (curr_logprobs - prev_logprobs).exp()
    weights = importance_weights(prev_logprobs, generation_logprobs, cfg, token_mask)
    applied = weights if cfg.use_importance_sampling_correction else torch.ones_like(weights)
    loss = masked_mean(applied * clipped_surrogate(ratio, adv, cfg), token_mask, global_tokens)
    kl_value = 0.0
    if cfg.ref_policy_kl_penalty > 0:
        if ref_logprobs is None:
            msg = "ref_policy_kl_penalty > 0 needs ref_logprobs"
            raise ValueError(msg)
        w = kl_weights(
            curr_logprobs, generation_logprobs, on_policy=cfg.use_on_policy_kl_approximation
        )
        per_token = k3_kl(curr_logprobs, ref_logprobs, w)
        loss = loss + cfg.ref_policy_kl_penalty * masked_mean(per_token, token_mask, global_tokens)
        kl_value = float(masked_mean(per_token.detach(), token_mask))
    metrics = _drift_metrics(curr_logprobs, prev_logprobs, generation_logprobs, token_mask, weights)
    metrics["kl_penalty"] = kl_value
    clamped = (ratio < 1 - cfg.ratio_clip_min) | (ratio > 1 + cfg.ratio_clip_max)
    metrics["probs_ratio_clamped_fraction"] = float(masked_mean(clamped.float(), token_mask))
    return LossOutput(loss, metrics)
