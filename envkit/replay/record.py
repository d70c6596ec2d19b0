"""Watch one CLI run: every path it read, stat'ed or listed, every environment variable it
read, what it wrote to stdout and stderr, and whether it did anything that is not a pure read.

How, without touching the code it watches (validate's loaders, PyYAML, zipfile, click, rich):

- Python's audit hooks (PEP 578) report every ``open`` (read or write, ``os.open`` too), every
  directory listing (``os.listdir``/``os.scandir``: ``os.walk``, globbing, ``Path.iterdir``),
  and every subprocess, socket, ``chdir`` and file-system change;
- ``os.stat``/``os.lstat``/``os.access``/``os.readlink`` are wrapped for the run: existence and
  type checks (``Path.exists``, ``os.path.isfile``, ``realpath``) raise no audit event, and a
  settings file looked for and not found is an input as much as one that was read;
- ``os.environ`` records the names it is asked for (``get``, ``in``, ``[]``; iterating it
  records every name);
- ``sys.stdout``/``sys.stderr`` are teed: the bytes reach the terminal as before and are kept,
  in order, with the stream they went to.
- a validate run over many packages forks workers (``envkit.check.workers``): the recorder is
  their :class:`~envkit.check.workers.Carrier`, so each worker identifies what it read, imported
  and printed, and the run's answer depends on it as on the parent's own reads.

An audit hook cannot be removed: one dispatcher is added per process, and it forwards events
only while a :meth:`Recorder.watching` block runs (the console entry's one run; tests' runs).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from stat import S_ISLNK
from typing import Any, TextIO

from envkit.check.workers import carrying
from envkit.replay.store import LISTED, LSTAT, STAT, Input, identity_of

__all__ = ["Recorder"]

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_IMPURE = ("subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
           "os.forkpty", "pty.", "socket.", "urllib.", "http.", "os.chdir", "os.fchdir",
           "os.kill", "webbrowser.", "ctypes.")
"""Audit events after which a run's answer depends on more than what it read."""
_CHANGES = {"os.remove": 1, "os.rename": 2, "os.rmdir": 1, "os.mkdir": 1, "os.link": 2,
            "os.symlink": 2, "os.truncate": 1, "os.chmod": 1, "os.chown": 1, "os.utime": 1,
            "shutil.rmtree": 1, "shutil.copyfile": 2, "shutil.move": 2, "tempfile.mkstemp": 1,
            "tempfile.mkdtemp": 1}
"""Audit events that change the file system -> how many of their first arguments are paths;
allowed only inside envkit's cache (the wheel-facts store writes there)."""


class _Tee:
    """A text stream that also keeps what is written to it, as bytes, in call order."""

    def __init__(self, stream: TextIO, fd: int, chunks: list[tuple[int, bytes]]) -> None:
        self._stream, self._fd, self._chunks = stream, fd, chunks

    def write(self, text: str) -> int:
        written = self._stream.write(text)  # first: a bytes argument raises here, as it would
        self._chunks.append((self._fd, text.encode(self._stream.encoding or "utf-8",
                                                   self._stream.errors or "strict")))
        return written

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":  # bytes written under the text layer are kept too
            return _BufferTee(self._stream.buffer, self._fd, self._chunks)
        return getattr(self._stream, name)


class _BufferTee:
    def __init__(self, raw: Any, fd: int, chunks: list[tuple[int, bytes]]) -> None:
        self._raw, self._fd, self._chunks = raw, fd, chunks

    def write(self, data: bytes) -> int:
        written: int = self._raw.write(data)
        self._chunks.append((self._fd, bytes(data)))
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class Recorder:
    """Record a run: ``with recorder.watching(): ...``, then :meth:`inputs` and :attr:`chunks`.

    ``ignore`` is envkit's cache directory: what the run reads or writes there (wheel facts,
    this store) is derived from other inputs, never one itself.
    """

    def __init__(self, ignore: str) -> None:
        self.ignore = tuple(os.path.abspath(d) for d in (ignore, sys.pycache_prefix) if d)
        """Never inputs, free to write: envkit's cache, ``$PYTHONPYCACHEPREFIX`` (bytecode)."""
        self._below = tuple(root + os.sep for root in self.ignore)
        self.paths: dict[tuple[int, str | bytes], None] = {}
        self.listed: dict[str | bytes, None] = {}
        self.env: dict[str, str | None] = {}
        self.chunks: list[tuple[int, bytes]] = []
        self.impure: str | None = None
        """Why the run's answer may depend on more than its inputs (the first such event)."""
        self.started_ns = time.time_ns()
        self._on = False
        self.carried_inputs: dict[tuple[int, str | bytes], Any] = {}
        """Inputs forked workers read, with the identities they took."""
        self._forking = False
        self._since_fork: tuple[int, int, int, int, frozenset[str]] | None = None
        self._early: dict[tuple[int, str | bytes], Any] = {}
        """Inputs this process identified while forked workers finished (``waiting``)."""
        self._early_marks: tuple[int, int, frozenset[str]] = (0, 0, frozenset())

    # -- the hooks -------------------------------------------------------------------------
    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if not self._on:
            return
        if event == "open":
            self._opened(args[0], args[2])
        elif event == "os.scandir":
            path = "." if args[0] is None else args[0]
            if isinstance(path, (str, bytes, os.PathLike)):
                self.listed[os.fspath(path)] = None
        elif event == "os.listdir":
            path = "." if args[0] is None else args[0]
            if isinstance(path, (str, bytes, os.PathLike)):
                self._listing(os.fspath(path))
        elif event == "os.fork" and self._forking:  # a validate worker: carried back
            self._forking = False
        elif event in _CHANGES:
            if not all(self._ours(arg) for arg in args[:_CHANGES[event]]):
                self._taint(event)
        elif event.startswith(_IMPURE):
            self._taint(event)

    def _opened(self, path: Any, flags: int | None) -> None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            self._taint("open of a file descriptor")  # open(0) reads stdin
            return
        path = os.fspath(path)
        if self._ours(path):
            return
        if flags is not None and flags & _WRITE_FLAGS:
            self._taint(f"write to {path!r}")
        else:
            self.paths[(STAT, path)] = None

    def _listing(self, path: str | bytes) -> None:
        """A directory the run listed with ``os.listdir``: its entries are inputs, unless the
        lister is the import system scanning ``sys.path`` (then the directory's own identity
        says whether a module appeared; the modules imported are inputs of their own). The
        import system never calls ``os.scandir``: those listings (a package walk's, 1,461 over
        the Gym tree) are the run's without looking at the caller's frame, itself an audit
        event."""
        if sys._getframe(3).f_code.co_filename.startswith("<frozen importlib"):
            if not self._ours(path):
                self.paths[(LISTED, path)] = None
        else:
            self.listed[path] = None

    def _ours(self, path: Any) -> bool:
        """``path`` is in envkit's cache or a bytecode cache (never an input, free to write)."""
        if not isinstance(path, (str, bytes, os.PathLike)):
            return False
        text = os.fsdecode(path)
        if "__pycache__" in text:
            return True
        # Only ".." can lead out of a directory a path starts with: normalise only then.
        full = text if text.startswith(os.sep) and ".." not in text else os.path.abspath(text)
        return full.startswith(self._below) or full in self.ignore  # a stat of every file: fast

    def _taint(self, why: str) -> None:
        self.impure = self.impure or why

    def _stat_wrapper(self, real: Callable[..., Any], follow: bool) -> Callable[..., Any]:
        def recorded(path: Any, *args: Any, **kwargs: Any) -> Any:
            if (self._on and isinstance(path, (str, bytes, os.PathLike))
                    and kwargs.get("dir_fd") is None):
                path_ = os.fspath(path)
                if not self._ours(path_):
                    how = STAT if follow and kwargs.get("follow_symlinks", True) else LSTAT
                    self.paths[(how, path_)] = None
            return real(path, *args, **kwargs)
        return recorded

    # -- forked validate workers (envkit.check.workers.Carrier) ----------------------------
    def before_fork(self) -> None:
        self._forking = True

    def forked(self) -> None:
        self._forking = False
        self._since_fork = (len(self.paths), len(self.listed), len(self.env), len(self.chunks),
                            frozenset(sys.modules))

    def waiting(self) -> None:
        """Identify what this process read so far while the workers finish their shares: it
        would wait for them idle, and identify it all after (~20 ms of the tree's run)."""
        on, self._on = self._on, False  # its own stats are no inputs
        try:
            found = self._since(*self._early_marks, set(self._early))
            self._early.update(((how, path), ident) for how, path, ident in found)
            self._early_marks = (len(self.paths), len(self.listed), frozenset(sys.modules))
        finally:
            self._on = on

    def carried(self) -> dict[str, Any]:
        """What the worker observed since the fork, identified here (the identities are taken
        on every core, as the reads were); the modules it imported are inputs too (the
        parent's ``sys.modules`` never sees them)."""
        self._on = False  # the worker's run is over: its own stats are no inputs
        paths, listed, env, chunks, modules = self._since_fork or (0, 0, 0, 0, frozenset())
        return {"inputs": list(self._since(paths, listed, modules, set())),
                "env": list(self.env.items())[env:], "chunks": self.chunks[chunks:],
                "impure": self.impure}

    def merge(self, state: Any) -> None:  # what carried() returned
        for how, path, ident in state["inputs"]:
            self.carried_inputs.setdefault((how, path), ident)
        for name, value in state["env"]:
            self.env.setdefault(name, value)
        self.chunks.extend(state["chunks"])
        if state["impure"]:
            self._taint(state["impure"])

    def _since(self, paths: int, listed: int, modules: frozenset[str],
               seen: set[tuple[int, str | bytes]]) -> Iterator[Input]:
        """What was read after the first ``paths`` paths and ``listed`` listings, and the files
        of the modules imported since ``modules``, identified now (``seen``: skipped)."""
        files = [getattr(module, "__file__", None)
                 for name, module in list(sys.modules.items()) if name not in modules]
        return _identified(list(self.paths)[paths:], list(self.listed)[listed:], files, seen)

    # -- the run ---------------------------------------------------------------------------
    def watching(self) -> _Watch:
        return _Watch(self)

    def inputs(self) -> Iterator[Input]:
        """Every input with its identity now (or when :meth:`waiting` took it): paths read or
        stat'ed, directories listed and each of their entries, and the file of every module the
        process imported; then what the forked workers read, as they identified it."""
        seen = set(self.carried_inputs)
        for key, ident in self._early.items():
            if key not in seen:
                seen.add(key)
                yield (*key, ident)
        yield from self._since(*self._early_marks, seen)
        for (how, path), ident in self.carried_inputs.items():
            yield how, path, ident


def _identified(paths: Iterable[tuple[int, str | bytes]], listed: Iterable[str | bytes],
                modules: Iterable[object], seen: set[tuple[int, str | bytes]]
                ) -> Iterator[Input]:
    """Each input not in ``seen`` with its identity now, one system call per path: a path
    looked at both ways (a package's files are listed, then opened: ~half the tree's 9,400
    inputs) is lstat'ed once, and stats as it lstats unless it is a symlink."""
    listed = list(listed)
    entries = ((LSTAT, os.path.join(d, name)) for d in listed for name in _names(d))
    fresh: list[tuple[int, str | bytes]] = []
    for key in [*paths, *((LISTED, d) for d in listed), *entries,
                *((STAT, f) for f in modules if isinstance(f, str))]:
        if key not in seen:  # the hooks kept out what is ours; entries may be ours
            seen.add(key)
            fresh.append(key)
    lstats = {path: _stat(os.lstat, path) for how, path in fresh if how == LSTAT}
    for how, path in fresh:
        st = lstats.get(path)
        if how != LSTAT and (path not in lstats or (st is not None and S_ISLNK(st.st_mode))):
            st = _stat(os.stat, path)
        yield how, path, None if st is None else identity_of(st, how)


def _stat(call: Callable[[Any], os.stat_result], path: str | bytes) -> os.stat_result | None:
    try:
        return call(path)
    except (OSError, ValueError):
        return None


def _names(directory: str | bytes) -> list[Any]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


class _RecordingEnviron(os._Environ):  # type: ignore[type-arg]
    """``os.environ`` that notes each name asked for into ``_seen`` (set for the run)."""

    _seen: dict[str, str | None] | None = None

    def __getitem__(self, key: str) -> str:
        try:
            value: str = super().__getitem__(key)
        except KeyError:
            self._note(key, None)
            raise
        self._note(key, value)
        return value

    def __iter__(self) -> Iterator[str]:
        for key in super().__iter__():
            self._note(key, super().__getitem__(key))
            yield key

    def _note(self, key: str, value: str | None) -> None:
        if _RecordingEnviron._seen is not None and isinstance(key, str):
            _RecordingEnviron._seen.setdefault(key, value)


def _dispatcher(watch: type[_Watch]) -> Callable[[str, tuple[Any, ...]], None]:
    """The process's audit hook, holding the class it reads the active recorder from.

    Audit events go on firing while the interpreter clears modules at exit, when this module's
    globals are already None or gone: a hook that looked ``_Watch`` up by name then raised
    (AttributeError, NameError), printed as "Exception ignored in audit hook" after a run's
    output.
    """

    def dispatch(event: str, args: tuple[Any, ...]) -> None:
        recorder = watch._audit_installed
        if recorder is not None:
            recorder._audit(event, args)

    return dispatch


class _Watch:
    """Install the hooks for the run's duration; leave the process as it was after."""

    _audit_installed: Recorder | None = None
    _hooked = False

    def __init__(self, recorder: Recorder) -> None:
        self.r = recorder
        self._saved: dict[str, Any] = {}
        self._carrying = carrying(recorder)

    def __enter__(self) -> Recorder:
        r = self.r
        if not _Watch._hooked:  # once per process: an audit hook cannot be removed
            sys.addaudithook(_dispatcher(_Watch))
            _Watch._hooked = True
        _Watch._audit_installed = r
        self._saved = {"stat": os.stat, "lstat": os.lstat, "access": os.access,
                       "readlink": os.readlink, "stdout": sys.stdout, "stderr": sys.stderr,
                       "environ": type(os.environ)}
        os.stat = r._stat_wrapper(os.stat, True)  # type: ignore[assignment]
        os.lstat = r._stat_wrapper(os.lstat, False)  # type: ignore[assignment]
        os.access = r._stat_wrapper(os.access, True)  # type: ignore[assignment]
        os.readlink = r._stat_wrapper(os.readlink, False)  # type: ignore[assignment]
        sys.stdout = _Tee(sys.stdout, 1, r.chunks)  # type: ignore[assignment]
        sys.stderr = _Tee(sys.stderr, 2, r.chunks)  # type: ignore[assignment]
        _RecordingEnviron._seen = r.env
        os.environ.__class__ = _RecordingEnviron
        self._carrying.__enter__()
        r._on = True
        return r

    def __exit__(self, *exc: object) -> None:
        r, saved = self.r, self._saved
        r._on = False
        self._carrying.__exit__(None, None, None)
        _Watch._audit_installed = None
        os.stat, os.lstat = saved["stat"], saved["lstat"]
        os.access, os.readlink = saved["access"], saved["readlink"]
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = saved["stdout"], saved["stderr"]
        os.environ.__class__ = saved["environ"]
        _RecordingEnviron._seen = None
