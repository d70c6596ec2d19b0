"""A command's error: one line (with its hint, diagnostics and evidence) on stderr, and the
JSON error object on stdout when the user asked for JSON (``envkit schema error``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from envkit.errors import INTERNAL, EnvkitError
from envkit.output.stdout import dump, echo
from envkit.validate.report import diagnostic_dict

if TYPE_CHECKING:
    from envkit.output.shapes import ErrorDict

__all__ = ["error_dict", "render_error"]


def error_dict(exc: BaseException, kind: str) -> ErrorDict:
    """The JSON error object of ``exc``, which ended a command as ``kind``.

    An ``EnvkitError`` carries its hint, EK code and diagnostics; click's own errors carry a
    formatted message; anything else is shown by its text alone.
    """
    known = exc if isinstance(exc, EnvkitError) else None
    message = str(exc.format_message()) if hasattr(exc, "format_message") else str(exc)
    code = known.code if known is not None and kind != "usage" else None
    return {
        "version": "1.0",
        "valid": False,
        "error": {"kind": kind, "type": type(exc).__name__, "message": message,
                  "hint": known.hint if known is not None else "",
                  "code": code if isinstance(code, str) else None},
        "diagnostics": [diagnostic_dict(d, None) for d in (known.diagnostics if known else ())],
    }


def render_error(exc: BaseException, kind: str, fmt: str, *, shown: bool = False) -> None:
    """The error on stderr (unless click ``shown`` it), and as JSON on stdout for ``json``."""
    data = error_dict(exc, kind)
    if not shown:
        _stderr_error(exc, kind, data)
    if fmt in ("json", "sarif"):
        echo(dump(data))


def _stderr_error(exc: BaseException, kind: str, data: ErrorDict) -> None:
    err = data["error"]
    if kind == INTERNAL:
        sys.stderr.write(f"envkit: internal error: {type(exc).__name__}: {exc}\n"
                         "Please report this with the command you ran.\n")
        return
    code = f"{err['code']} " if err["code"] else ""
    sys.stderr.write(f"error: {code}{err['message']}\n")
    if err["hint"]:
        sys.stderr.write(f"  = help: {err['hint']}\n")
    for d in data["diagnostics"]:
        where = f"{d['path']}:{d['line']}" if d["line"] else d["path"]
        sys.stderr.write(f"{where}: {d['severity']}[{d['code']}] {d['message']} "
                         f"(fix: {d['hint']})\n")
    tail = exc.log_tail if isinstance(exc, EnvkitError) else ""
    if tail:
        sys.stderr.write(f"{tail}\n")
    sys.stderr.flush()
