"""A policy with no model: every request gets a scripted completion.

Why: a spin-up gate must prove that a package's servers start and score, not that a model is
good, and loading even a tiny model needs torch. Gym's ``vllm_model`` still needs token ids and
logprobs, so the backend speaks bytes: token id = UTF-8 byte, each sampled with logprob 0.0.

What it answers is a :class:`Script`: a per-request key (by default the prompt's last user
text, which a dataset row and Gym's policy request for it share) -> completion, and a fallback.
A probe swaps the script between batches on one bring-up (:meth:`ScriptedBackend.use`): one
attribute store, so a request sees the old script or the new one, never a mix. The policy
server's one worker answers requests in turn, so a script needs no locking.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BYTES_PER_TOKEN", "DEFAULT_COMPLETION", "Script", "ScriptedBackend",
           "completion_for_row", "prompt_text"]

DEFAULT_COMPLETION = "envkit smoke"
BYTES_PER_TOKEN = 4
"""Bytes of English a real tokenizer's token stands for: a caller that replays replies a real
policy could write within ``max_new_tokens`` (the probe's references) budgets this many of the
scripted policy's byte tokens per token."""
_ANSWER_FIELDS = ("expected_answer", "answer", "ground_truth", "target", "label")


def _token_ids(prompt: Any) -> bool:
    """A prompt of token ids (``/v1/completions``), not chat messages."""
    return bool(prompt) and all(isinstance(t, int) for t in prompt)


def _content_text(content: Any) -> str:
    """A message's text: a string, or the ``text`` of its content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def prompt_text(messages: Any) -> str:
    """The last user message's text: the key a row and a policy request share."""
    if isinstance(messages, str):
        return messages
    if not isinstance(messages, Sequence):
        return ""
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role", "user") == "user":
            return _content_text(message.get("content"))
    return ""


def completion_for_row(row: Mapping[str, Any]) -> str | None:
    """The row's own answer (``expected_answer`` and friends), when it carries one."""
    for key in _ANSWER_FIELDS:
        value = row.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


@dataclass(frozen=True, slots=True)
class Script:
    """``by_key[key(prompt)]``, else ``completion``: one scripted policy."""

    completion: str = DEFAULT_COMPLETION
    by_key: Mapping[str, str] = field(default_factory=dict)
    key: Callable[[Any], str] = prompt_text
    """Prompt (chat messages) -> the key ``by_key`` is looked up with."""

    def answer(self, prompt: Any) -> str:
        """The completion for a chat prompt (a token-id prompt gets ``completion``)."""
        if _token_ids(prompt):
            return self.completion or DEFAULT_COMPLETION
        return self.by_key.get(self.key(prompt), self.completion or DEFAULT_COMPLETION)


def _byte_tokenizer(text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
    """What ``PolicyServer`` asks of ``backend.tokenizer`` for text prompts."""
    return {"input_ids": list(text.encode())}


class ScriptedBackend:
    """``GenerationBackend`` answering by its current :attr:`script`.

    ``ScriptedBackend(completion, by_prompt)`` is the one-round form: the prompt's last user
    text -> completion, else ``completion``.
    """

    max_model_len = 1 << 20

    def __init__(self, completion: str = DEFAULT_COMPLETION,
                 by_prompt: Mapping[str, str] | None = None,
                 model_name: str = "envkit-smoke", *, script: Script | None = None,
                 bytes_per_token: int = 1) -> None:
        self.script = script or Script(completion or DEFAULT_COMPLETION, dict(by_prompt or {}))
        self.model_name = model_name
        self.bytes_per_token = bytes_per_token
        """Reply bytes allowed per ``max_tokens`` (1: a byte is a token)."""
        self.tokenizer = _byte_tokenizer
        self.requests = 0
        """How many prompts were answered (the report shows that the policy was reached)."""
        self.by_key: Counter[str] = Counter()
        """Prompts answered per key of the script that answered them."""

    @contextlib.contextmanager
    def use(self, script: Script) -> Iterator[Script]:
        """``with backend.use(Script(...)):`` -- answer by ``script``, then by the one before."""
        before, self.script = self.script, script
        try:
            yield script
        finally:
            self.script = before

    def encode_prompt(self, prompt: Any) -> list[int]:
        if _token_ids(prompt):
            return list(prompt)
        lines = [f"{m.get('role', 'user')}: {_content_text(m.get('content'))}\n"
                 for m in prompt if isinstance(m, Mapping)]
        return list("".join(lines).encode())

    def decode(self, token_ids: Sequence[int]) -> str:
        return bytes(t for t in token_ids if 0 <= t < 256).decode("utf-8", "replace")

    def generate(self, prompts: Sequence[Any], params: Any) -> list[Any]:
        from envkit.policy_server.generation import Completion, FinishReason, GenerationOutput

        outputs = []
        script = self.script  # one script per batch, even if it is swapped meanwhile
        for prompt in prompts:
            self.requests += 1
            text = script.answer(prompt)
            if not _token_ids(prompt):
                self.by_key[script.key(prompt)] += 1
            for stop in params.stop:
                text = text.split(stop, 1)[0] if stop else text
            ids = tuple(text.encode() or b" ")
            budget = params.max_tokens * self.bytes_per_token
            finish: FinishReason = "length" if len(ids) > budget else "stop"
            ids = ids[:budget]
            tops = tuple(((t, 0.0),) for t in ids) if params.top_logprobs else ()
            comp = Completion(ids, (0.0,) * len(ids), self.decode(ids), finish, tops)
            outputs.append(GenerationOutput(tuple(self.encode_prompt(prompt)),
                                            (comp,) * params.n))
        return outputs

    def update_weights(self, state_dict: Any) -> None:
        """Nothing to load: the script is the policy."""

    def close(self) -> None:
        """Nothing to release."""
