"""Stored answers: one file per command line, found by a key built without reading any input,
checked input by input before it is trusted.

Entries are ``marshal`` data (a builtin module: the lookup imports nothing), written to a temp
name and renamed into place, so a reader sees a whole entry or none; one that cannot be read,
is of another format or belongs to another key (a checksum collision) is a miss.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
import zlib

from envkit.supply.root import write_whole

__all__ = ["LISTED", "LSTAT", "STAT", "Answer", "Identity", "Input", "ItemRecord", "Key",
           "Recalled", "identity", "identity_after", "identity_of", "load", "lstat_of", "packed",
           "save", "unpacked"]

_FORMAT = 4

Identity = tuple[int, int, int, int, int, int] | None
"""(mode, inode, device, size, mtime ns, ctime ns); ``None``: the path did not exist."""
Input = tuple[int, str | bytes, Identity]
"""(how it was looked at: :data:`LSTAT`, :data:`STAT` or :data:`LISTED`, the path as the run
named it, its identity when the run ended)."""

LSTAT, STAT, LISTED = 0, 1, 2

ItemRecord = tuple[str, bytes, tuple[tuple[int, str | bytes], ...], str]
"""One item of the run (a package, by its path as given): its result, pickled; what it read
under its own path while it ran and nothing else of the run read (a listed directory stands for
its entries too); its path's realpath."""


class Recalled:
    """An item an earlier run answered, its inputs unchanged: its result (pickled), its own
    inputs (as :data:`ItemRecord` has them), those with their listed entries and identities,
    and its realpath."""

    __slots__ = ("inputs", "own", "real", "result")

    def __init__(self, result: bytes, own: tuple[tuple[int, str | bytes], ...],
                 inputs: tuple[Input, ...], real: str) -> None:
        self.result, self.own, self.inputs, self.real = result, own, inputs, real


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


def identity_after(path: str | bytes, how: int,
                   lstats: dict[str | bytes, os.stat_result | None]) -> Identity:
    """``identity(path, how)``, one system call per path: a path in ``lstats`` (the lstat
    results of the paths looked at without following links) is not stat'ed again unless it
    is a symlink (a package's files are listed, then opened: half a tree's inputs)."""
    if path in lstats:
        st = lstats[path]
        if how == LSTAT or st is None or not stat.S_ISLNK(st.st_mode):
            return None if st is None else identity_of(st, how)
    return identity(path, how)


def lstat_of(path: str | bytes) -> os.stat_result | None:
    """``os.lstat(path)``; ``None`` when it does not exist (or cannot be stat'ed)."""
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


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


def packed(inputs: list[Input] | tuple[Input, ...]) -> bytes:
    """``inputs`` as one part of an :class:`Answer`: a ``marshal`` blob.

    Why parts: each process of a forked run packs what it identified itself, on its own core
    (a worker before it ends, the parent while it waits), so the end of the run neither
    unpickles the workers' inputs nor marshals them again (~2.5 ms of Gym's 145 packages).
    """
    return marshal.dumps(tuple(inputs))


def unpacked(parts: tuple[bytes, ...]) -> tuple[Input, ...]:
    """The inputs of :func:`packed` parts, in order (a path two processes looked at is in both
    their parts).

    :raises EOFError, ValueError, TypeError: a part that is not one.
    """
    found: list[Input] = []
    for part in parts:
        found += marshal.loads(part)
    return tuple(found)


class Answer:
    """A run's answer (its output chunks, by stream, and its exit status), what it read (in
    :func:`packed` parts; a path may be in two, looked at by two processes), and its items
    (the packages of a tree) with what each of them read."""

    __slots__ = ("_inputs", "chunks", "env", "items", "parts", "status")

    def __init__(self, env: tuple[tuple[str, str | None], ...], parts: tuple[bytes, ...],
                 chunks: tuple[tuple[int, bytes], ...], status: int,
                 items: tuple[ItemRecord, ...] = ()) -> None:
        self.env, self.parts, self.chunks, self.status = env, parts, chunks, status
        self.items = items
        self._inputs: tuple[Input, ...] | None = None

    @property
    def inputs(self) -> tuple[Input, ...]:
        """Every input, from all parts (unpacked at the first look)."""
        if self._inputs is None:
            self._inputs = unpacked(self.parts)
        return self._inputs

    def stale(self) -> frozenset[str] | None:
        """The items whose own inputs changed (none: the answer holds as it is); ``None`` when
        a variable or any other input changed (the first such difference stops the check).

        The paths looked at without following links come first (a package's files, as its
        directories list them), so that ``identity_after`` stats no path twice."""
        environ = os.environ
        if any(environ.get(name) != value for name, value in self.env):
            return None
        owners: dict[tuple[int, str | bytes], str] | None = None
        stale: set[str] = set()

        def own(how: int, path: str | bytes) -> bool:
            """Note the changed input's item; False: it is no item's own."""
            nonlocal owners
            if owners is None:  # built at the first change only: a replay never needs it
                owners = {read: key for key, _, reads, _ in self.items for read in reads}
            key = owners.get((how, path))
            if key is None and how == LSTAT:  # an entry of a directory the item listed
                key = owners.get((LISTED, os.path.dirname(path)))
            if key is not None:
                stale.add(key)
            return key is not None

        lstats: dict[str | bytes, os.stat_result | None] = {}
        for how, path, ident in self.inputs:
            if how == LSTAT:
                lstats[path] = lstat_of(path)
                if identity_after(path, how, lstats) != ident and not own(how, path):
                    return None
        for how, path, ident in self.inputs:
            if how == LSTAT or identity_after(path, how, lstats) == ident:
                continue
            if not own(how, path):
                return None
        return frozenset(stale)

    def recalled(self, stale: frozenset[str]) -> dict[str, Recalled]:
        """The items not in ``stale``, as :class:`Recalled`."""
        known = {(how, path): (how, path, ident) for how, path, ident in self.inputs}
        entries: dict[str | bytes, list[Input]] = {}
        for how, path, ident in self.inputs:
            if how == LSTAT:
                entries.setdefault(os.path.dirname(path), []).append((how, path, ident))
        found = {}
        for key, result, own, real in self.items:
            if key in stale:
                continue
            inputs = [known[read] for read in own if read in known]
            inputs += [entry for how, path in own if how == LISTED
                       for entry in entries.get(path, ())]
            found[key] = Recalled(result, own, tuple(inputs), real)
        return found

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
        fmt, text, env, parts, chunks, status, items = data
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if fmt != _FORMAT or text != key.text:
        return None
    answer = Answer(env, parts, chunks, status, items)
    try:
        _ = answer.inputs  # unpacked here: a part that does not load is a miss
    except (EOFError, ValueError, TypeError):
        return None
    return answer


def save(key: Key, answer: Answer, store: str) -> None:
    """Store ``answer`` under ``key`` (whole or not at all); a store that cannot be written
    costs only the speed."""
    data = (_FORMAT, key.text, answer.env, answer.parts, answer.chunks, answer.status,
            answer.items)
    try:
        packed = marshal.dumps(data)
    except ValueError:  # a value marshal cannot write: no answer stored
        return
    write_whole(key.file(store), packed)
