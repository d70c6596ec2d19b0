"""A command's result on stdout (or in its report file), or its interruption, and the exit
status each stands for (``envkit.cli.app`` renders every command through here)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

__all__ = ["emit", "interrupted"]


def emit(result: object, fmt: str, report_file: str | None) -> int:
    """Render ``result`` in ``fmt``; ``None`` or an int is the status itself."""
    if result is None or isinstance(result, int):
        return result or 0
    from envkit.output import render

    if report_file is None:
        return render.render(result, fmt)
    with Path(report_file).open("w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh):
        return render.render(result, fmt)


def interrupted() -> int:
    """Ctrl-C (click's ``Abort`` too): say so on stderr; 130 = 128 + SIGINT, as shells report it."""
    sys.stderr.write("Interrupted.\n")
    sys.stderr.flush()
    return 130
