"""A policy with no model: every request gets a fixed or row-derived completion.

Why: a spin-up gate must prove that a package's servers start and score, not that a model is
good; loading even a tiny model costs seconds and needs torch. Gym's ``vllm_model`` still needs
what vLLM returns (token ids and logprobs), so the backend speaks bytes: token id = UTF-8 byte,
every token sampled with probability 1 (logprob 0.0). It is a ``GenerationBackend``, so envkit's
OpenAI-compatible ``PolicyServer`` serves it unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DEFAULT_COMPLETION", "ScriptedBackend", "completion_for_row", "prompt_text"]

DEFAULT_COMPLETION = "envkit smoke"
_ANSWER_FIELDS = ("expected_answer", "answer", "ground_truth", "target", "label")


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


class _ByteTokenizer:
    """What ``PolicyServer`` asks of ``backend.tokenizer`` for text prompts."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": list(text.encode())}


class ScriptedBackend:
    """``GenerationBackend`` answering ``by_prompt[last user text]`` or ``completion``."""

    max_model_len = 1 << 20

    def __init__(self, completion: str = DEFAULT_COMPLETION,
                 by_prompt: Mapping[str, str] | None = None,
                 model_name: str = "envkit-smoke") -> None:
        self.completion = completion or DEFAULT_COMPLETION
        self.by_prompt = dict(by_prompt or {})
        self.model_name = model_name
        self.tokenizer = _ByteTokenizer()
        self.requests = 0
        """How many prompts were answered (the report shows that the policy was reached)."""

    def encode_prompt(self, prompt: Any) -> list[int]:
        if prompt and all(isinstance(t, int) for t in prompt):
            return list(prompt)
        lines = [f"{m.get('role', 'user')}: {_content_text(m.get('content'))}\n"
                 for m in prompt if isinstance(m, Mapping)]
        return list("".join(lines).encode())

    def decode(self, token_ids: Sequence[int]) -> str:
        return bytes(t for t in token_ids if 0 <= t < 256).decode("utf-8", "replace")

    def _text_for(self, prompt: Any) -> str:
        if prompt and all(isinstance(t, int) for t in prompt):
            return self.completion
        return self.by_prompt.get(prompt_text(prompt), self.completion)

    def generate(self, prompts: Sequence[Any], params: Any) -> list[Any]:
        from envkit.endpoint.generation import Completion, GenerationOutput

        outputs = []
        for prompt in prompts:
            self.requests += 1
            text = self._text_for(prompt)
            for stop in params.stop:
                text = text.split(stop, 1)[0] if stop else text
            ids = tuple(text.encode() or b" ")
            finish = "length" if len(ids) > params.max_tokens else "stop"
            ids = ids[: params.max_tokens]
            tops = tuple(((t, 0.0),) for t in ids) if params.top_logprobs else ()
            comp = Completion(ids, (0.0,) * len(ids), self.decode(ids), finish, tops)
            outputs.append(GenerationOutput(tuple(self.encode_prompt(prompt)),
                                            (comp,) * params.n))
        return outputs

    def update_weights(self, state_dict: Any) -> None:
        """Nothing to load: the script is the policy."""

    def close(self) -> None:
        """Nothing to release."""
