"""The one interface the policy server and the GRPO trainer generate through.

Kept as narrow as NeMo-RL's ``GenerationInterface`` should have stayed: generate, take new
weights, close. Every output carries what GRPO needs from the sampler: the prompt's token ids,
the generated token ids, and the logprobs they were sampled with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from envkit.errors import FailedError

if TYPE_CHECKING:
    import torch

__all__ = [
    "Completion",
    "GenerationBackend",
    "GenerationError",
    "GenerationOutput",
    "Prompt",
    "SamplingParams",
]

Message = Mapping[str, Any]
Prompt = Sequence[Message] | Sequence[int]
FinishReason = Literal["stop", "length"]


class GenerationError(FailedError, ValueError):
    """A request the backend cannot serve (e.g. prompt longer than the context); HTTP 400."""


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """vLLM's sampling knobs that GRPO and Gym's ``vllm_model`` use.

    ``temperature == 0`` is greedy. ``top_k`` keeps the k likeliest tokens (None: all, as
    vLLM's -1). ``top_logprobs`` > 0 also returns the k most likely tokens at each step
    (OpenAI ``top_logprobs``). ``seed`` makes the request's samples a function of the request
    alone: the backend draws them from a generator of their own.
    """

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int | None = None
    max_tokens: int = 16
    seed: int | None = None
    top_logprobs: int = 0
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.n < 1 or self.max_tokens < 1:
            msg = f"n and max_tokens must be >= 1 (got n={self.n}, max_tokens={self.max_tokens})"
            raise GenerationError(msg)
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            msg = f"need temperature >= 0 and 0 < top_p <= 1 (got {self.temperature}, {self.top_p})"
            raise GenerationError(msg)
        if self.top_k is not None and self.top_k < 1:
            msg = f"top_k must be >= 1, or unset for every token (got {self.top_k})"
            raise GenerationError(msg)


@dataclass(frozen=True, slots=True)
class Completion:
    """One sample. ``logprobs[i]`` is the log-probability of ``token_ids[i]`` under the
    temperature-scaled distribution it was drawn from (vLLM's processed logprobs, which is
    what NeMo-RL compares against the trainer's logprobs)."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    text: str
    finish_reason: FinishReason
    top_logprobs: tuple[tuple[tuple[int, float], ...], ...] = ()

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


@dataclass(frozen=True, slots=True)
class GenerationOutput:
    """All ``n`` samples for one prompt."""

    prompt_token_ids: tuple[int, ...]
    completions: tuple[Completion, ...]


@runtime_checkable
class GenerationBackend(Protocol):
    """What a policy server or trainer needs from an inference engine."""

    model_name: str
    max_model_len: int

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[GenerationOutput]:
        """Sample ``params.n`` completions per prompt, batched.

        :raises GenerationError: a prompt the backend cannot serve.
        """
        ...

    def encode_prompt(self, prompt: Prompt) -> list[int]:
        """The prompt's token ids exactly as ``generate`` would feed them (for ``/tokenize``)."""
        ...

    def decode(self, token_ids: Sequence[int]) -> str:
        """Token ids back to text (special tokens dropped)."""
        ...

    def update_weights(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        """Load new policy weights; later ``generate`` calls sample from them."""
        ...

    def close(self) -> None:
        """Release the model (and GPU memory)."""
        ...
