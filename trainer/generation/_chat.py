"""Render chat messages to prompt text: the tokenizer's chat template, or a plain fallback.

Character tokenizers built with ``tokenizers`` have no chat template; for them envkit uses a
fixed, documented layout so a trained policy sees the same prompt text at every step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["message_text", "render_fallback"]


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
