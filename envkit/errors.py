"""The one error type: every documented failure of an envkit command is an ``EnvkitError``.

Why one base: the CLI decides a command's exit status and the JSON error's ``kind`` from the
exception itself, not from a table of class names, so a new failure cannot fall through to
"internal error" by being forgotten.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["EnvkitError"]


class EnvkitError(Exception):
    """A failure envkit documents: its kind, exit status and (optionally) a hint and EK code."""

    kind: ClassVar[str] = "failed"
    """``usage`` | ``invalid`` | ``failed`` | ``missing-extra``: the JSON error's ``kind``."""
    exit_code: ClassVar[int] = 1
