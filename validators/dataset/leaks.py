"""EK507's matcher and its per-file tally: a row whose prompt already holds its reference answer
(why that matters: the rule's text).

The reference is the field the probe's oracle replies with (``envkit.model.reference``),
matched on token boundaries, case and whitespace ignored, from ``min_chars`` characters on: a
short reference ("4", "B", "yes") turns up in prompts by chance and would drown the real leaks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envkit.model.reference import prompt_texts, reference_field, reference_text
from envkit.validators._base import CheckOptions

__all__ = ["DEFAULT_MIN_CHARS", "LeakTally", "leaks", "normalized"]

DEFAULT_MIN_CHARS: int = CheckOptions().leak_min_chars
"""``leak-min-chars``: the shortest reference (after normalizing) that is looked for."""

SHOWN_LINES = 5
"""Row numbers a finding lists; the rest are counted."""

_SPACE = re.compile(r"\s+")


def normalized(text: str) -> str:
    """Case-folded, whitespace runs as one space, trimmed.

    >>> normalized("  The   Answer\\n IS ")
    'the answer is'
    """
    return _SPACE.sub(" ", text).strip().casefold()


def leaks(reference: str, prompt: str) -> bool:
    """``reference`` occurs in ``prompt`` as whole tokens: a word character at either end of
    the reference must not continue into a word character of the prompt.

    >>> leaks("paris", "the capital is paris.")
    True
    >>> leaks("1234", "call 12345 now")
    False
    >>> leaks("(a+b)", "expand x(a+b)")
    True
    """
    head = r"(?<!\w)" if reference[:1].isalnum() or reference[:1] == "_" else ""
    tail = r"(?!\w)" if reference[-1:].isalnum() or reference[-1:] == "_" else ""
    return re.search(head + re.escape(reference) + tail, prompt) is not None


@dataclass
class LeakTally:
    """What one pass over one file found: rows that carry a reference long enough to look
    for, and which of them hold it in the prompt."""

    min_chars: int = DEFAULT_MIN_CHARS
    checked: int = 0
    leaked: int = 0
    lines: list[int] = field(default_factory=list)
    """The first ``SHOWN_LINES`` leaking rows' line numbers."""
    fields: dict[str, int] = field(default_factory=dict)
    """Reference field -> leaking rows that keep it there."""

    def add(self, line: int, row: Mapping[str, Any]) -> None:
        """Count ``row`` (a parsed dataset row at ``line``)."""
        name = reference_field(row)
        text = reference_text(row) if name else None
        if name is None or text is None or isinstance(row.get(name), dict | list):
            return
        reference = normalized(text)
        if len(reference) < self.min_chars:
            return
        self.checked += 1
        params = row.get("responses_create_params")
        prompt = params.get("input") if isinstance(params, Mapping) else None
        if any(leaks(reference, normalized(t)) for t in prompt_texts(prompt)):
            self.leaked += 1
            self.fields[name] = self.fields.get(name, 0) + 1
            if len(self.lines) < SHOWN_LINES:
                self.lines.append(line)
