"""The platform's 422 ``detail`` texts -> the EK code envkit reports for the same defect.

The readings are rows of the one signature table (``validators/runtime_signatures.py``,
``Where.SUBMIT``), next to the Gym runtime's: a user who reads "EK500" in the submit error
finds the rule, its why and its fix with ``envkit rule EK500``. Matched in order; the first
hit wins.
"""

from __future__ import annotations

from envkit.validators.runtime_signatures import Where, first_match

__all__ = ["ek_code_for"]


def ek_code_for(detail: str) -> str | None:
    """The EK code for a platform rejection, or None when envkit has no rule for it."""
    signature = first_match(detail, Where.SUBMIT)
    return signature.code if signature is not None else None
