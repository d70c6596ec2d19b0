"""The Responses API input shapes Gym accepts in ``responses_create_params``, checked without Gym.

Facts from the pinned Gym version's ``nemo_gym/openai_utils.py``:
``NeMoGymResponseCreateParamsNonStreaming`` (``extra="forbid"``, ``input: str | list[item]``),
``NeMoGymEasyInputMessage`` (roles system/developer/user/assistant, content a string or a list
of content parts),
``NeMoGymMessage`` (no assistant) and the ``NeMoGymResponseInputItem`` union. The slow test
``tests/validators/test_dataset_rows.py::test_verdicts_match_real_gym`` compares these verdicts
with Gym's own pydantic models, so a Gym upgrade that changes them fails loudly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from envkit.validators._base import json_kind

__all__ = ["CREATE_PARAMS_FIELDS", "MESSAGE_ROLES", "input_problems"]

MESSAGE_ROLES = ("system", "developer", "user", "assistant")

CREATE_PARAMS_FIELDS = frozenset({
    "background", "context_management", "conversation", "include", "input", "instructions",
    "max_output_tokens", "max_tool_calls", "metadata", "model", "moderation",
    "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key",
    "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier", "store", "stream",
    "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p",
    "truncation", "user",
})
"""``NeMoGymResponseCreateParamsNonStreaming.model_fields``: any other key is rejected."""

_NON_MESSAGE_ITEM_TYPES = frozenset({
    "additional_tools", "apply_patch_call", "apply_patch_call_output", "code_interpreter_call",
    "compaction", "compaction_trigger", "computer_call", "computer_call_output",
    "custom_tool_call", "custom_tool_call_output", "file_search_call", "function_call",
    "function_call_output", "image_generation_call", "local_shell_call", "local_shell_call_output",
    "mcp_approval_request", "mcp_approval_response", "mcp_call", "mcp_list_tools", "reasoning",
    "shell_call", "shell_call_output", "tool_search_call", "tool_search_output", "web_search_call",
})
"""Replayed tool/reasoning items: accepted by type, their bodies are the agent's business."""

_INPUT_PART_TYPES = frozenset({"input_text", "input_image", "input_file", "input_video"})
_OUTPUT_PART_TYPES = frozenset({"output_text", "refusal"})
_TEXT_PARTS = frozenset({"input_text", "output_text"})
_IMAGE_DETAILS = ("low", "high", "auto", "original")


def input_problems(value: Any) -> Iterator[tuple[str, str]]:
    """``(key path, problem)`` for each way ``input`` breaks Gym's request model.

    >>> list(input_problems([{"role": "user", "content": "hi"}]))
    []
    >>> list(input_problems([{"role": "human", "content": "hi"}]))[0][0]
    'input[0].role'
    """
    if isinstance(value, str):
        return
    if not isinstance(value, list):
        yield "input", f"is {_kind(value)}; expected a string or a list of messages"
        return
    for index, item in enumerate(value):
        yield from _item_problems(f"input[{index}]", item)


_MESSAGE_OBJECT = 'a message object {"role": "user", "content": "..."}'
_CONTENT_PART = 'a content part {"type": "input_text", "text": "..."}'


def _item_problems(where: str, item: Any) -> Iterator[tuple[str, str]]:
    if not isinstance(item, dict):
        yield where, f"is {_kind(item)}; expected {_MESSAGE_OBJECT}"
        return
    item_type = item.get("type")
    if item_type is None and "role" not in item:
        yield where, "has neither `role` nor `type`; a message needs `role` and `content`"
    elif item_type is None or item_type == "message":
        yield from _message_problems(where, item)
    elif item_type not in _NON_MESSAGE_ITEM_TYPES:
        yield f"{where}.type", f"is {item_type!r}, not a Responses API input item type"


def _message_problems(where: str, item: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    role = item.get("role")
    if role not in MESSAGE_ROLES:
        shown = "missing" if role is None else repr(role)
        yield f"{where}.role", f"is {shown}; expected one of {', '.join(MESSAGE_ROLES)}"
    if "content" not in item:
        yield f"{where}.content", "is missing"
        return
    content = item["content"]
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        yield (
            f"{where}.content",
            f"is {_kind(content)}; expected a string or a list of content parts",
        )
        return
    for index, part in enumerate(content):
        yield from _part_problems(f"{where}.content[{index}]", part, role)


def _part_problems(where: str, part: Any, role: Any) -> Iterator[tuple[str, str]]:
    if not isinstance(part, dict):
        yield where, f"is {_kind(part)}; expected {_CONTENT_PART}"
        return
    part_type = part.get("type")
    allowed = _OUTPUT_PART_TYPES | _INPUT_PART_TYPES if role == "assistant" else _INPUT_PART_TYPES
    if part_type not in allowed:
        yield f"{where}.type", f"is {part_type!r}; expected one of {', '.join(sorted(allowed))}"
    elif part_type in _TEXT_PARTS and not isinstance(part.get("text"), str):
        yield f"{where}.text", "must be a string"
    elif part_type == "input_image" and part.get("detail") not in _IMAGE_DETAILS:
        yield f"{where}.detail", f"must be one of {', '.join(_IMAGE_DETAILS)}"


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else json_kind(value)
