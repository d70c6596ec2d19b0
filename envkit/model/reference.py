"""Where a dataset row keeps its reference answer, and the text of the prompt it is asked with.

Why here, below the rules and the probe: the probe's oracle replies with the reference, and the
dataset rules check that it is not already in the prompt; both must agree on which field it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["REFERENCE_FIELDS", "prompt_texts", "reference_field", "reference_text"]

REFERENCE_FIELDS = ("expected_answer", "answer", "ground_truth", "expected_output", "solution")
"""Where rows keep the reference answer: the fields Gym's resources servers read it from
(``answer`` is also verifiers')."""


def _lookup(row: Mapping[str, Any], name: str) -> Any:
    value: Any = row
    for part in name.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def reference_field(row: Mapping[str, Any], field: str | None = None) -> str | None:
    """The field the row's reference is read from: ``field`` (a dotted path) when it holds
    one, else the first of ``REFERENCE_FIELDS`` that does; ``None`` when none does.

    >>> reference_field({"answer": "", "solution": "x"})
    'solution'
    """
    for name in (field,) if field else REFERENCE_FIELDS:
        if _as_text(_lookup(row, name)):
            return name
    return None


def reference_text(row: Mapping[str, Any], field: str | None = None) -> str | None:
    """The row's reference answer as text (a structured one as JSON); ``None`` when there is
    none (or it is empty).

    >>> reference_text({"expected_answer": "tenalp"})
    'tenalp'
    >>> reference_text({"meta": {"gold": 3}}, "meta.gold")
    '3'
    >>> reference_text({"answer": ""}) is None
    True
    """
    name = reference_field(row, field)
    return None if name is None else _as_text(_lookup(row, name))


def prompt_texts(prompt: Any) -> Iterator[str]:
    """Every text the policy is shown: a string prompt, or each message's string content and
    the ``text`` of each of its content parts (Responses ``input_text`` and chat ``text``).

    >>> list(prompt_texts([{"role": "system", "content": "Be brief."},
    ...     {"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]))
    ['Be brief.', 'Hi']
    """
    if isinstance(prompt, str):
        yield prompt
        return
    if not isinstance(prompt, Sequence):
        return
    for message in prompt:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            yield content
        elif isinstance(content, Sequence):
            for part in content:
                text = part.get("text") if isinstance(part, Mapping) else None
                if isinstance(text, str):
                    yield text
