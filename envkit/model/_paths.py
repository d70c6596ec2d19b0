"""Package-relative paths as the cluster sees them, and as a terminal can show them."""

from __future__ import annotations

__all__ = ["LOCK_NAME", "PROVENANCE_NAME", "display_path", "safe_relpath"]

LOCK_NAME = "wheels.lock"
PROVENANCE_NAME = "provenance.json"
"""The lock's and the record's file names, here so that a package without them never imports
their models."""

_CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127)}


def display_path(path: str) -> str:
    """``path`` printable on one line of any stream: undecodable bytes (kept by the OS as
    surrogate escapes) and control characters such as a newline in a file name are shown as
    ``\\xNN`` instead of crashing a UTF-8 writer or splitting a diagnostic in two."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text.translate(_CONTROL)


def safe_relpath(value: str) -> str | None:
    """Normalised POSIX form of a manifest path, or None when it is absolute or uses ``..``
    (plain string operations: a POSIX path is absolute exactly when it starts with ``/``)."""
    if not value or value.startswith(("/", "\\")):
        return None
    if len(value) > 1 and value[1] == ":":  # C:\... style
        return None
    if ".." in value.replace("\\", "/").split("/"):  # `..\` is refused too, conservatively
        return None
    # The cluster is POSIX: a backslash is part of a file name there, not a separator.
    parts = [p for p in value.split("/") if p not in ("", ".")]
    return "/".join(parts) if parts else None

