"""Stored answers: one file per command line, found by a key built without reading any input,
checked input by input before it is trusted.

Entries are ``marshal`` data (a builtin module: the lookup imports nothing), written to a temp
name and renamed into place, so a reader sees a whole entry or none; one that cannot be read,
is of another format or belongs to another key (a checksum collision) is a miss.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import sys
import zlib

__all__ = ["LISTED", "LSTAT", "STAT", "Answer", "Identity", "Input", "Key", "identity",
           "identity_of", "load", "save"]

_FORMAT = 2

Identity = tuple[int, int, int, int, int, int] | None
"""(mode, inode, device, size, mtime ns, ctime ns); ``None``: the path did not exist."""
Input = tuple[int, str | bytes, Identity]
"""(how it was looked at: :data:`LSTAT`, :data:`STAT` or :data:`LISTED`, the path as the run
named it, its identity when the run ended)."""

LSTAT, STAT, LISTED = 0, 1, 2


def identity(path: str | bytes, how: int) -> Identity:
    """``path``'s identity now; ``None`` when it does not exist (or cannot be stat'ed).

    A directory that was stat'ed but not listed is known by its type and inode only: its
    times move with every entry added anywhere in it (``/tmp``, resolved by ``realpath``), and
    what the run could learn from a stat is that it is a directory, and which one. A listed
    directory keeps its times: they say whether an entry was added or removed.
    """
    try:
        st = os.lstat(path) if how == LSTAT else os.stat(path)
    except (OSError, ValueError):
        return None
    return identity_of(st, how)


def identity_of(st: os.stat_result, how: int) -> Identity:
    """The identity ``identity`` gives for the stat result ``st`` of a path looked at ``how``."""
    if how != LISTED and stat.S_ISDIR(st.st_mode):
        return (st.st_mode, st.st_ino, st.st_dev, 0, 0, 0)
    return (st.st_mode, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Key:
    """What a run's answer depends on before it reads anything: the interpreter, the command
    line, where it ran, the terminal it writes to, and the variables Python itself reads."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    @classmethod
    def now(cls, args: list[str]) -> Key:
        ttys = tuple(_terminal(fd) for fd in (0, 1, 2))
        env = sorted((k, v) for k, v in os.environ.items()
                     if k.startswith(("PYTHON", "LC_")) or k in ("LANG", "LANGUAGE"))
        return cls(repr((_FORMAT, sys.executable, sys.version, args, os.getcwd(), ttys, env)))

    def file(self, store: str) -> str:
        return os.path.join(store, f"{zlib.crc32(self.text.encode()):08x}.marshal")


def _terminal(fd: int) -> tuple[int, int] | None:
    """A terminal's size (rich wraps to it), ``None`` for anything else."""
    try:
        return tuple(os.get_terminal_size(fd)) if os.isatty(fd) else None  # type: ignore[return-value]
    except OSError:
        return None


class Answer:
    """A run's answer (its output chunks, by stream, and its exit status) and what it read."""

    __slots__ = ("chunks", "env", "inputs", "status")

    def __init__(self, env: tuple[tuple[str, str | None], ...], inputs: tuple[Input, ...],
                 chunks: tuple[tuple[int, bytes], ...], status: int) -> None:
        self.env, self.inputs, self.chunks, self.status = env, inputs, chunks, status

    def unchanged(self) -> bool:
        """Every variable and every input is as the run saw it (the first difference stops)."""
        environ = os.environ
        if any(environ.get(name) != value for name, value in self.env):
            return False
        return all(identity(path, how) == ident for how, path, ident in self.inputs)

    def replay(self) -> int:
        """Write the run's output again, each chunk to its stream, in order; its status."""
        streams = {1: sys.stdout, 2: sys.stderr}
        for fd, data in self.chunks:
            stream = streams[fd]
            stream.flush()
            stream.buffer.write(data)
            stream.buffer.flush()
        return self.status


def load(key: Key, store: str) -> Answer | None:
    """The answer stored for ``key``, or ``None`` (none, unreadable, another key's)."""
    try:
        with open(key.file(store), "rb") as fh:
            data = marshal.loads(fh.read())
        fmt, text, env, inputs, chunks, status = data
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if fmt != _FORMAT or text != key.text:
        return None
    return Answer(env, inputs, chunks, status)


def save(key: Key, answer: Answer, store: str) -> None:
    """Store ``answer`` under ``key`` (whole or not at all); a store that cannot be written
    costs only the speed."""
    path = key.file(store)
    temp = f"{path}.{os.getpid()}.tmp"
    data = (_FORMAT, key.text, answer.env, answer.inputs, answer.chunks, answer.status)
    try:
        os.makedirs(store, exist_ok=True)
        with open(temp, "wb") as fh:
            marshal.dump(data, fh)
        os.replace(temp, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(temp)
