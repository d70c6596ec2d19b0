"""Refitting a generation engine with the trainer's weights: what is checked before and after.

Why validate everything first: an engine that loads half a state dict and goes on samples from
a policy nobody trains (the worst failure a GRPO trainer can have, and a silent one). So every
name, shape and value of the new weights is checked against the engine's checkpoint layout
before a single tensor is sent; only then does the engine load them, all at once.

Why a probe after: a refit can still go wrong inside the engine (a packed copy not refreshed, a
fused name mapped wrong). After each refit the engine scores a fixed probe sequence and its
per-token logprobs must match the trainer's for the same weights (:func:`check_probe`).
"""

from __future__ import annotations

import json
import math
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envkit.policy_server.generation import GenerationError
from envkit.trainer.generation._chat import encode_prompt

if TYPE_CHECKING:
    from pathlib import Path

    import torch

__all__ = [
    "PROBE_TEXT",
    "ProbeCheck",
    "RefitError",
    "check_probe",
    "plan_refit",
    "probe_expectation",
    "probe_tolerance",
    "refit_check",
    "refit_engine",
    "safetensors_layout",
    "scores_prompts",
]

#: The fixed probe: a chat turn in plain characters every tokenizer covers.
PROBE_TEXT = "Refit probe: repeat ab, then count 1 2 3."

_HEADER_MAX = 100 * 1024 * 1024  # the safetensors format caps its JSON header at 100 MB


class RefitError(GenerationError):
    """The new weights cannot be loaded, or the engine does not score what the trainer does."""


@dataclass(frozen=True, slots=True)
class ProbeCheck:
    """The probe's token ids and the trainer's logprob of each token after the first."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]


def safetensors_layout(model_dir: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor name and shape in a model directory's ``*.safetensors`` files.

    Reads only each file's JSON header (8-byte length, then JSON), never the tensors.

    :raises RefitError: no safetensors file, or a header that is not the format's.
    """
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        msg = f"{model_dir} has no *.safetensors weights to check a refit against"
        raise RefitError(msg)
    layout: dict[str, tuple[int, ...]] = {}
    for path in files:
        with path.open("rb") as fh:
            head = fh.read(8)
            size = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
            if not 0 < size <= _HEADER_MAX:
                msg = f"{path} is not a safetensors file (header length {size})"
                raise RefitError(msg)
            header = json.loads(fh.read(size))
        for name, entry in header.items():
            if name != "__metadata__":
                layout[name] = tuple(int(d) for d in entry["shape"])
    return layout


def plan_refit(
    state: Mapping[str, torch.Tensor], layout: Mapping[str, tuple[int, ...]], *,
    tied: tuple[str, str] | None,
) -> list[tuple[str, torch.Tensor]]:
    """The weights to load, in the layout's order, after checking every one of them.

    :param layout: the engine's checkpoint names and shapes (:func:`safetensors_layout`).
    :param tied: ``(head, embedding)`` names when the model ties its output head to its input
        embedding: the head is then not loaded (the engine reads the embedding), but it must
        equal the embedding if it is sent.
    :raises RefitError: listing every unknown, missing, misshapen, non-float or non-finite
        weight at once (nothing has been sent to the engine).
    """
    problems: list[str] = []
    weights = dict(state)
    if tied is not None and tied[0] in weights and tied[0] not in layout:
        head = weights.pop(tied[0])
        embedding = weights.get(tied[1])
        if embedding is None or not head.equal(embedding):  # equal: same shape and values
            problems.append(f"{tied[0]} differs from {tied[1]}, but the model ties them")
    for what, names in (("unknown to the engine", set(weights) - set(layout)),
                        ("missing", set(layout) - set(weights))):
        if names:
            more = f" (+{len(names) - 8} more)" if len(names) > 8 else ""
            problems.append(f"{what}: {', '.join(sorted(names)[:8])}{more}")
    for name, tensor in weights.items():
        if name not in layout:
            continue
        if tuple(tensor.shape) != layout[name]:
            problems.append(f"{name} has shape {tuple(tensor.shape)}, the engine's is "
                            f"{layout[name]}")
        elif not tensor.is_floating_point():
            problems.append(f"{name} is {tensor.dtype}, not a floating point tensor")
        elif not bool(tensor.isfinite().all()):
            problems.append(f"{name} has NaN or infinite values")
    if problems:
        msg = "the new weights were not loaded (the engine keeps the previous ones): " + "; ".join(
            problems)
        raise RefitError(msg)
    return [(name, weights[name]) for name in layout]


def probe_tolerance(engine_dtype: str) -> float:
    """Largest accepted ``|engine - trainer|`` logprob on one probe token.

    Why: in float32 only the kernels differ (fused qkv, another attention), far below 1e-3,
    while a stale layer or a wrong tied head is off by tenths (see the tests). In 16-bit the
    weights themselves are rounded and the trainer keeps float32 masters, so a few hundredths
    per token is rounding, not a broken refit.
    """
    return 1e-3 if engine_dtype == "float32" else 0.08


def check_probe(expected: ProbeCheck, got: Sequence[float], tolerance: float) -> dict[str, float]:
    """Compare the engine's probe logprobs with the trainer's; returns the metrics.

    ``refit_probe_max_abs_logprob_diff`` is the largest per-token difference;
    ``refit_probe_mult_prob_error`` is NeMo-RL's ``token_mult_prob_error`` on the probe
    (mean of ``exp(|diff|)``; 1.0 when the two agree exactly).

    :raises RefitError: a length mismatch or a token beyond ``tolerance``.
    """
    if len(got) != len(expected.logprobs):
        msg = f"the engine scored {len(got)} probe tokens, the trainer {len(expected.logprobs)}"
        raise RefitError(msg)
    diffs = [abs(float(g) - e) for g, e in zip(got, expected.logprobs, strict=True)]
    worst = math.nan if any(math.isnan(d) for d in diffs) else max(diffs, default=0.0)
    if not worst <= tolerance:  # NaN fails too
        where = next(i for i, d in enumerate(diffs) if not d <= tolerance)
        msg = (
            f"after the refit the generation engine's logprobs differ from the trainer's on "
            f"the probe prompt: token {where + 1} of {len(diffs)} by {worst:.4g} (tolerance "
            f"{tolerance:g}); the engine would sample from weights other than the trained ones, "
            "so the step stops"
        )
        raise RefitError(msg)
    mult = sum(math.exp(d) for d in diffs) / max(len(diffs), 1)
    return {"refit_probe_max_abs_logprob_diff": worst, "refit_probe_mult_prob_error": mult}


def probe_expectation(policy: Any) -> ProbeCheck:
    """The trainer's side of the probe: the probe chat turn's ids and their logprobs at
    temperature 1 (the engine's prompt logprobs are raw, before any sampling processing)."""
    import torch

    from envkit.trainer.policy import model_mode, token_logprobs

    tok = policy.tokenizer
    if getattr(tok, "chat_template", None):
        ids = encode_prompt(tok, [{"role": "user", "content": PROBE_TEXT}])
    else:
        ids = list(tok(PROBE_TEXT, add_special_tokens=False)["input_ids"])
    model = policy.model
    device = next(model.parameters()).device
    with torch.no_grad(), model_mode(model, training=False):
        lp = token_logprobs(model, torch.tensor([ids], device=device), None, 1.0)
    return ProbeCheck(tuple(int(i) for i in ids), tuple(float(x) for x in lp[0].tolist()))


def scores_prompts(engine: Any) -> bool:
    """Whether a generation engine can score a prompt (``verify``): the vLLM backend can; the
    HF backend loads with ``load_state_dict(strict=True)`` and needs no probe."""
    return callable(getattr(engine, "verify", None))


def refit_check(policy: Any, engine: Any) -> ProbeCheck | None:
    """The trainer's probe expectation, when ``engine`` will check it."""
    return probe_expectation(policy) if scores_prompts(engine) else None


def refit_engine(engine: Any, state: Mapping[str, torch.Tensor],
                 check: ProbeCheck | None) -> dict[str, float]:
    """Wake the engine, load ``state`` into it, run the probe ``check``; returns the metrics
    (``timing/refit``, seconds, and the probe's).

    :raises RefitError: the weights were refused, the load failed, or the probe disagrees.
    """
    started = time.perf_counter()
    wake = getattr(engine, "wake_up", None)
    if wake is not None:
        wake()
    engine.update_weights(state)
    metrics = {"timing/refit": time.perf_counter() - started}
    if check is not None and scores_prompts(engine):
        metrics.update(engine.verify(check))
    return metrics
