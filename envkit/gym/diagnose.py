"""A failure's text (an install's output, a server's log, a failed rollout) -> the likely EK
rule and a one-line reason.

The signature table is rule data (``validators/runtime_signatures.py``, one table for every
reader); this module applies it and trims the evidence shown to the user.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from envkit.validators import RULES
from envkit.validators.runtime_signatures import Where, first_match

__all__ = ["Finding", "Where", "diagnose", "tail"]

_NO_READING = "see the log tail above"
_EVIDENCE_CHARS = 200


class Finding(NamedTuple):
    """What a text shows: the likely rule (None: no rule matched), one line for the user, and
    the line of the text that showed it ("" when none did)."""

    code: str | None
    reason: str
    evidence: str = ""


def diagnose(text: str, where: Where, *, offline: bool = False) -> Finding:
    """The likely rule for ``text`` read as ``where`` (``offline``: the run had no route out).

    A signature without a reason of its own reads as its rule's title.
    """
    signature = first_match(text, where, offline=offline)
    if signature is None:
        return Finding(None, _NO_READING)
    rule = RULES.get(signature.code) if signature.code else None
    reason = signature.reason or (rule.title if rule else _NO_READING)
    return Finding(signature.code, reason, _evidence(text, signature.pattern))


def _evidence(text: str, pattern: str) -> str:
    """The (last) line holding the match, trimmed: what the user greps the log for."""
    found = list(re.finditer(pattern, text)) if pattern else []
    if not found:
        return ""
    start, end = found[-1].span()
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = " ".join(text[line_start:line_end if line_end != -1 else len(text)].split())
    return line if len(line) <= _EVIDENCE_CHARS else line[:_EVIDENCE_CHARS - 3] + "..."


def tail(text: str, lines: int = 40) -> str:
    """The last ``lines`` lines: the part of a log that shows why a server stopped."""
    return "\n".join(text.rstrip().splitlines()[-lines:])
