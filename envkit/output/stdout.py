"""The two ways a result reaches stdout: JSON as every command prints it, and lines of text."""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["dump", "echo"]


def dump(data: Any) -> str:
    """``data`` as envkit prints JSON: indented, non-ASCII kept (file names, prompts)."""
    return json.dumps(data, indent=2, ensure_ascii=False)


def echo(text: str) -> None:
    """``text`` on stdout, ending in one newline, flushed (a pipe reader sees it at once)."""
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()
