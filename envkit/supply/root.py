"""Where envkit keeps what it caches (``$ENVKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/envkit``,
else ``~/.cache/envkit``) and how a file there is written. Strings and bytes, with nothing but
``os``, ``time`` and ``contextlib`` imported: validate writes its stores through here and its
start-up imports no more than it needs."""

from __future__ import annotations

import contextlib
import os
import time

__all__ = ["cache_dir", "write_whole"]


def cache_dir() -> str:
    if env := os.environ.get("ENVKIT_CACHE_DIR"):
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "envkit")


def write_whole(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: a reader never sees half a file, and
    two writers of one entry each rename a complete file of their own over it. A cache that
    cannot be written costs nothing but the speed, so an ``OSError`` leaves no temp file
    behind and is not raised. The directory is made only when it is missing (a first run
    writes an entry per tree)."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        try:
            fd = os.open(tmp, _NEW_FILE, 0o666)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, _NEW_FILE, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
