"""Tool calls in a completion's text, as vLLM's ``hermes`` tool parser reads them.

Why: vLLM moves the ``<tool_call>{...}</tool_call>`` blocks a model wrote into the message's
``tool_calls``, which Gym turns into Responses ``function_call`` items; a backend that writes
text (a scripted policy, a small model) reaches a tool-calling server only through that parse.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

__all__ = ["TOOL_CALL", "assistant_message"]

TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


def _call(index: int, text: str, raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    arguments = value.get("arguments", {})
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments,
                                                                      ensure_ascii=False)
    digest = hashlib.sha256(f"{index}:{text}".encode()).hexdigest()[:24]
    return {"id": f"chatcmpl-tool-{digest}", "type": "function",
            "function": {"name": value["name"], "arguments": encoded}}


def assistant_message(text: str, tools_declared: bool) -> dict[str, Any]:
    """The assistant message for ``text``: with ``tools_declared``, every well-formed
    ``<tool_call>`` block becomes a tool call and the text before the first one the content
    (``None`` when empty, as vLLM answers); a block that is not JSON with a ``name`` stays
    text, as the parser leaves it.

    >>> m = assistant_message('<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>', True)
    >>> m["content"], m["tool_calls"][0]["function"]
    (None, {'name': 'f', 'arguments': '{"x": 1}'})
    >>> assistant_message("<tool_call>{}</tool_call>", True)["tool_calls"]
    []
    >>> assistant_message('<tool_call>{"name": "f"}</tool_call>', False)["tool_calls"]
    []
    """
    if not tools_declared or "<tool_call>" not in text:
        return {"role": "assistant", "content": text, "tool_calls": []}
    calls = [c for i, m in enumerate(TOOL_CALL.finditer(text))
             if (c := _call(i, text, m.group(1))) is not None]
    if not calls:
        return {"role": "assistant", "content": text, "tool_calls": []}
    content = text[:text.index("<tool_call>")].strip()
    return {"role": "assistant", "content": content or None, "tool_calls": calls}
