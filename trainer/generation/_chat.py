"""Render chat messages to prompt text: the tokenizer's chat template, or a plain fallback.

Character tokenizers built with ``tokenizers`` have no chat template; for them envkit uses a
fixed, documented layout so a trained policy sees the same prompt text at every step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envkit.policy_server.generation import GenerationError

__all__ = ["encode_prompt", "encode_prompts", "message_text", "render_fallback"]


def message_text(message: Mapping[str, Any]) -> str:
    """A message's text: a string, or the concatenated ``text`` parts of a content list."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))


def render_fallback(
    messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool = True
) -> str:
    """``<|role|>content\\n`` per message, then ``<|assistant|>`` to start the reply.

    >>> render_fallback([{"role": "user", "content": "hi"}])
    '<|user|>hi\\n<|assistant|>'
    """
    text = "".join(f"<|{m.get('role', 'user')}|>{message_text(m)}\n" for m in messages)
    return text + ("<|assistant|>" if add_generation_prompt else "")


def encode_prompt(tokenizer: Any, prompt: Sequence[Any]) -> list[int]:
    """A prompt's token ids: token ids as given, or messages through the tokenizer's chat
    template (:func:`render_fallback` without one). Every backend encodes through this one
    function: the engine that samples and the trainer that scores must see the same ids."""
    if not prompt or isinstance(prompt[0], int):
        return [int(t) for t in prompt]
    messages = [dict(m) for m in prompt]
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if isinstance(ids, Mapping) else ids)
    text = render_fallback(messages)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def encode_prompts(tokenizer: Any, prompts: Sequence[Any], max_model_len: int) -> list[list[int]]:
    """:func:`encode_prompt` of each prompt.

    :raises GenerationError: a prompt leaves no room for a token in ``max_model_len``.
    """
    encoded = [encode_prompt(tokenizer, p) for p in prompts]
    for ids in encoded:
        if len(ids) >= max_model_len:
            msg = (f"This model's maximum context length is {max_model_len} tokens; "
                   f"the prompt has {len(ids)}")
            raise GenerationError(msg)
    return encoded
