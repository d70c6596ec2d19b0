"""HF transformers backend: batched sampling on CPU with the logprobs GRPO needs.

``model.generate`` hides the per-token logprobs of the distribution it actually sampled from
(processed vs raw scores depend on flags and version), so the loop here is written out: left
padded batch, KV cache, temperature, top-k, top-p, one seeded ``torch.Generator`` per call.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from envkit.policy_server.generation import (
    Completion,
    GenerationOutput,
    Prompt,
    SamplingParams,
)
from envkit.trainer.generation._chat import encode_prompt, encode_prompts
from envkit.trainer.hf_overrides import apply_hf_overrides

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["HFBackend", "sample_next"]

_MAX_BATCH = 64  # sequences sampled together; more prompts go in further batches


def sample_next(
    logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw one token per row.

    :param logits: ``(B, V)`` next-token logits.
    :returns: ``(tokens (B,), logprobs (B,), logprob table (B, V))``, taken from the
        distribution the token is drawn from: ``logits / temperature`` with the tokens outside
        ``top_k`` and then outside ``top_p`` masked out, renormalised (vLLM's
        ``processed_logprobs``); greedy (``temperature == 0``) takes the argmax of the raw
        distribution.
    """
    if params.temperature == 0:
        logp = torch.log_softmax(logits.float(), dim=-1)
        tokens = logp.argmax(dim=-1)
    else:
        scaled = logits.float() / params.temperature
        logp = torch.log_softmax(_top_p(_top_k(scaled, params.top_k), params.top_p), dim=-1)
        tokens = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
    return tokens, logp.gather(-1, tokens[:, None]).squeeze(-1), logp


def _top_k(logits: torch.Tensor, k: int | None) -> torch.Tensor:
    """Mask every token below the k-th largest logit (ties with it stay, as in vLLM). (B, V)."""
    if k is None or k >= logits.shape[-1]:
        return logits
    kth = logits.topk(k, dim=-1).values[..., -1:]  # (B, 1)
    return logits.masked_fill(logits < kth, float("-inf"))


def _top_p(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Mask the tail beyond cumulative mass ``top_p`` (the top token always stays). (B, V)."""
    if top_p >= 1.0:
        return logits
    sorted_probs, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
    drop_sorted = sorted_probs.cumsum(-1) - sorted_probs > top_p  # mass before this token
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


class HFBackend:
    """A ``GenerationBackend`` over a local HF model directory, on CPU."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        model_name: str | None = None,
        hf_config_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        self.model_dir = Path(model_dir)
        self.model_name = model_name or self.model_dir.name
        self.device = torch.device("cpu")
        self.tokenizer: PreTrainedTokenizerBase = AutoTokenizer.from_pretrained(self.model_dir)
        config = AutoConfig.from_pretrained(self.model_dir)  # the trainer's overrides, too
        apply_hf_overrides(config, dict(hf_config_overrides or {}))
        self.model: PreTrainedModel = AutoModelForCausalLM.from_pretrained(
            self.model_dir, config=config, dtype=torch.float32
        ).to(self.device).eval()
        self.max_model_len = int(getattr(self.model.config, "max_position_embeddings", 2048))
        self._lock = threading.Lock()
        self._eos = self._eos_ids()
        self._pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        # transformers 5 renamed ``past_key_values`` to ``cache`` (the old name warns).
        params = inspect.signature(self.model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    def _eos_ids(self) -> frozenset[int]:
        ids = self.model.config.eos_token_id
        ids = [ids] if isinstance(ids, int) else list(ids or [])
        if self.tokenizer.eos_token_id is not None:
            ids.append(self.tokenizer.eos_token_id)
        return frozenset(ids)

    def encode_prompt(self, prompt: Prompt) -> list[int]:
        return encode_prompt(self.tokenizer, prompt)

    def decode(self, token_ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode([t for t in token_ids if t not in self._eos],
                                         skip_special_tokens=True))

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[GenerationOutput]:
        encoded = encode_prompts(self.tokenizer, prompts, self.max_model_len)
        flat = [ids for ids in encoded for _ in range(params.n)]
        with self._lock:
            samples: list[Completion] = []
            for start in range(0, len(flat), _MAX_BATCH):
                samples.extend(self._sample(flat[start:start + _MAX_BATCH], params))
        return [
            GenerationOutput(tuple(ids), tuple(samples[i * params.n:(i + 1) * params.n]))
            for i, ids in enumerate(encoded)
        ]

    @torch.no_grad()
    def _sample(self, prompts: list[list[int]], params: SamplingParams) -> list[Completion]:
        generator = torch.Generator(device=self.device)
        if params.seed is not None:
            generator.manual_seed(params.seed)
        else:
            generator.seed()
        width = max(len(p) for p in prompts)
        budget = min(params.max_tokens, self.max_model_len - width)
        ids = torch.full((len(prompts), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):  # left padding keeps the last column the next slot
            ids[row, width - len(prompt):] = torch.tensor(prompt)
            mask[row, width - len(prompt):] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        return self._decode_loop(ids, mask, budget, params, generator)

    def _decode_loop(
        self, ids: torch.Tensor, mask: torch.Tensor, budget: int,
        params: SamplingParams, generator: torch.Generator,
    ) -> list[Completion]:
        batch = ids.shape[0]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        tokens: list[list[int]] = [[] for _ in range(batch)]
        logprobs: list[list[float]] = [[] for _ in range(batch)]
        tops: list[list[tuple[tuple[int, float], ...]]] = [[] for _ in range(batch)]
        reasons: list[str | None] = [None] * batch
        past: Any = None
        step_ids = ids
        for _ in range(budget):
            out = self.model(input_ids=step_ids, attention_mask=mask, position_ids=positions,
                             use_cache=True, logits_to_keep=1, **{self._cache_kw: past})
            past = getattr(out, self._cache_kw)
            nxt, lp, table = sample_next(out.logits[:, -1, :], params, generator)
            self._record(nxt, lp, table, params, tokens, logprobs, tops, reasons)
            if all(r is not None for r in reasons):
                break
            step_ids = nxt[:, None]
            mask = torch.cat([mask, mask.new_ones((batch, 1))], -1)
            positions = positions[:, -1:] + 1
        return [
            Completion(tuple(tokens[i]), tuple(logprobs[i]), self.decode(tokens[i]),
                       "stop" if reasons[i] == "stop" else "length", tuple(tops[i]))
            for i in range(batch)
        ]

    def _record(
        self, nxt: torch.Tensor, lp: torch.Tensor, table: torch.Tensor, params: SamplingParams,
        tokens: list[list[int]], logprobs: list[list[float]],
        tops: list[list[tuple[tuple[int, float], ...]]], reasons: list[str | None],
    ) -> None:
        # a masked token's logprob is -inf; vLLM reports it as -9999.0 (JSON has no -inf)
        k = params.top_logprobs
        top = table.clamp_min(-9999.0).topk(k, dim=-1) if k else None
        for row, (tok, val) in enumerate(zip(nxt.tolist(), lp.tolist(), strict=True)):
            if reasons[row] is not None:
                continue
            tokens[row].append(tok)
            logprobs[row].append(val)
            if top is not None:
                tops[row].append(tuple(zip(top.indices[row].tolist(), top.values[row].tolist(),
                                           strict=True)))
            if tok in self._eos or any(s in self.decode(tokens[row][-32:]) for s in params.stop):
                reasons[row] = "stop"

    def update_weights(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        with self._lock, torch.no_grad():
            self.model.load_state_dict(dict(state_dict), strict=True)

    def close(self) -> None:
        with self._lock:
            self.model = None
