"""A failing server's log -> the likely EK rule and a one-line reason.

The table is rule data and lives with the rules (``validators/runtime_signatures.py``); this
module only applies it and trims the evidence shown to the user.
"""

from __future__ import annotations

import re

from envkit.validators.runtime_signatures import RUNTIME_SIGNATURES

__all__ = ["diagnose_log", "tail"]


def diagnose_log(text: str) -> tuple[str | None, str]:
    """The likely EK code and a one-line reason for a server's failure log."""
    for signature in RUNTIME_SIGNATURES:
        if re.search(signature.pattern, text):
            return signature.code, signature.reason
    return None, "see the log tail above"


def tail(text: str, lines: int = 40) -> str:
    """The last ``lines`` lines: the part of a log that shows why a server stopped."""
    return "\n".join(text.rstrip().splitlines()[-lines:])
