"""Watch one CLI run: every path it read, stat'ed or listed, every environment variable it
read, what it wrote to stdout and stderr, and whether it did anything that is not a pure read.

How, without touching the code it watches (validate's loaders, PyYAML, zipfile, click, rich):

- Python's audit hooks (PEP 578) report every ``open`` (read or write, ``os.open`` too), every
  directory listing (``os.listdir``/``os.scandir``: ``os.walk``, globbing, ``Path.iterdir``),
  and every subprocess, socket, ``chdir`` and file-system change;
- ``os.stat``/``os.lstat``/``os.access``/``os.readlink`` are wrapped for the run: existence and
  type checks (``Path.exists``, ``os.path.isfile``, ``realpath``) raise no audit event, and a
  settings file looked for and not found is an input as much as one that was read;
- ``os.scandir`` keeps the entries of each listing read to the end: they name the directory's
  entries, with the stats the run's walk took (``envkit.replay.listings``);
- ``os.environ`` records the names it is asked for (``get``, ``in``, ``[]``; iterating it
  records every name);
- ``sys.stdout``/``sys.stderr`` are teed: the bytes reach the terminal as before and are kept,
  in order, with the stream they went to.
- a validate run over many packages forks workers (``envkit.check.workers``): the recorder is
  their :class:`~envkit.check.workers.Carrier`, so each worker identifies what it read, imported
  and printed, and the run's answer depends on it as on the parent's own reads;
- and it marks where each package of such a run starts and ends (it is the run's
  :class:`~envkit.check.workers.Memo`): what a package read under its own path, and nothing
  else of the run read, is that package's own, kept with its result (``item_records``), so a
  later run whose only changes are some packages' own files validates those again and takes
  the others' results from the store (``recall``).

An audit hook cannot be removed: one dispatcher is added per process, and it forwards events
only while a :meth:`Recorder.watching` block runs (the console entry's one run; tests' runs).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from envkit.check.workers import carrying, remembering
from envkit.replay.identify import identified
from envkit.replay.items import item_records
from envkit.replay.listings import Listings, keeping_listings
from envkit.replay.store import LISTED, LSTAT, STAT, Input, ItemRecord, Recalled, packed, unpacked
from envkit.replay.streams import RecordingEnviron, Tee

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
        self.scanned: Listings = {}
        """The ``os.scandir`` listings read to the end, with their entries (their names and
        stats identify the listed directories' entries)."""
        self.env: dict[str, str | None] = {}
        self.chunks: list[tuple[int, bytes]] = []
        self.impure: str | None = None
        """Why the run's answer may depend on more than its inputs (the first such event)."""
        self.started_ns = time.time_ns()
        self._on = False
        self.carried_parts: list[bytes] = []
        """Inputs forked workers read, with the identities they took (``store.packed``)."""
        self.newest = 0
        """The latest mtime or ctime (ns) among the inputs packed so far."""
        self._forking = False
        self._since_fork: tuple[int, int, int, int, frozenset[str]] | None = None
        self._early: set[tuple[int, str | bytes]] = set()
        """Inputs this process identified while forked workers finished (``waiting``)."""
        self._early_parts: list[bytes] = []
        self._early_marks: tuple[int, int, frozenset[str]] = (0, 0, frozenset())
        self._item: dict[tuple[int, str | bytes], None] | None = None
        """What the item running now (``fork_map`` with keys: one package) read so far."""
        self._item_chunks = 0
        self.outside: dict[tuple[int, str | bytes], None] = {}
        """What was read while no item ran: before the packages (which paths are packages),
        after them (the report)."""
        self.foreign: dict[tuple[int, str | bytes], None] = {}
        """What items read outside their own paths: the settings files above them, the
        modules they imported, another package's files."""
        self.items: dict[str, tuple[list[tuple[int, str | bytes]], bytes]] = {}
        """Each item run here or carried back: what it read under its own path, its result
        (pickled)."""
        self.recalled: dict[str, Recalled] = {}
        """Items an earlier run answered whose inputs are unchanged (set before the run)."""
        self.reused: dict[str, Recalled] = {}
        """The recalled items this run took instead of running them."""

    # -- the hooks -------------------------------------------------------------------------
    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if not self._on:
            return
        if event == "open":
            self._opened(args[0], args[2])
        elif event in ("os.scandir", "os.listdir"):
            path = "." if args[0] is None else args[0]
            if isinstance(path, (str, bytes, os.PathLike)):
                if event == "os.scandir":  # never the import system's (see _listing)
                    self._list(os.fspath(path))
                else:
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
            self._read((STAT, path))

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
                self.foreign[(LISTED, path)] = None  # sys.path: every item's
        else:
            self._list(path)

    def _read(self, key: tuple[int, str | bytes]) -> None:
        """A path the run opened or stat'ed: the run's, and the item's running now (or the
        part of the run outside the items)."""
        self.paths[key] = None
        (self.outside if self._item is None else self._item)[key] = None

    def _list(self, path: str | bytes) -> None:
        """A directory the run listed, the same way."""
        self.listed[path] = None
        (self.outside if self._item is None else self._item)[(LISTED, path)] = None

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
                    self._read((how, path_))
            return real(path, *args, **kwargs)
        return recorded

    # -- forked validate workers (envkit.check.workers.Carrier) ----------------------------
    def before_fork(self) -> None:
        self._forking = True

    def forked(self) -> None:
        self._forking = False
        self.items, self.outside, self.foreign = {}, {}, {}  # the parent keeps its own
        self._since_fork = (len(self.paths), len(self.listed), len(self.env), len(self.chunks),
                            frozenset(sys.modules))

    def waiting(self) -> None:
        """Identify what this process read so far while the workers finish their shares: it
        would wait for them idle, and identify it all after (~10 ms of the tree's run)."""
        on, self._on = self._on, False  # its own stats are no inputs
        try:
            found = list(self._since(*self._early_marks, set(self._early)))
            self._early.update((how, path) for how, path, _ in found)
            self._early_marks = (len(self.paths), len(self.listed), frozenset(sys.modules))
            self._early_parts.append(self._pack(found))
        finally:
            self._on = on

    def carried(self) -> dict[str, Any]:
        """What the worker observed since the fork, identified here (the identities are taken
        on every core, as the reads were); the modules it imported are inputs too (the
        parent's ``sys.modules`` never sees them)."""
        self._on = False  # the worker's run is over: its own stats are no inputs
        paths, listed, env, chunks, modules = self._since_fork or (0, 0, 0, 0, frozenset())
        inputs = self._pack(list(self._since(paths, listed, modules, set())))
        return {"inputs": inputs, "newest": self.newest,
                "env": list(self.env.items())[env:], "chunks": self.chunks[chunks:],
                "impure": self.impure, "items": self.items, "outside": list(self.outside),
                "foreign": list(self.foreign)}

    def merge(self, state: Any) -> None:  # what carried() returned
        self.carried_parts.append(state["inputs"])
        self.newest = max(self.newest, state["newest"])
        for name, value in state["env"]:
            self.env.setdefault(name, value)
        self.chunks.extend(state["chunks"])
        if state["impure"]:
            self._taint(state["impure"])
        self.items.update(state["items"])
        self.outside.update(dict.fromkeys(state["outside"]))
        self.foreign.update(dict.fromkeys(state["foreign"]))

    def _since(self, paths: int, listed: int, modules: frozenset[str],
               seen: set[tuple[int, str | bytes]]) -> Iterator[Input]:
        """What was read after the first ``paths`` paths and ``listed`` listings, and the files
        of the modules imported since ``modules``, identified now (``seen``: skipped)."""
        files = [getattr(module, "__file__", None)
                 for name, module in list(sys.modules.items()) if name not in modules]
        return identified(list(self.paths)[paths:], list(self.listed)[listed:], files, seen,
                          self.scanned)

    # -- items (envkit.check.workers.Memo): one package each ---------------------------------
    def recall(self, keys: Sequence[str]) -> dict[int, object]:
        """The items an earlier run answered whose inputs are all unchanged, by index: their
        results come from the store, their inputs go into this run's answer as they were."""
        import pickle  # only a run that reuses an item

        found: dict[int, object] = {}
        for i, key in enumerate(keys):
            recalled = self.recalled.get(key)
            if recalled is None or key in self.reused:
                continue
            try:
                found[i] = pickle.loads(recalled.result)  # our own store's bytes
            except Exception:  # a result that no longer loads: the item runs
                continue
            self.reused[key] = recalled
        return found

    def begin(self, key: str) -> None:
        self._item = {}
        self._item_chunks = len(self.chunks)

    def end(self, key: str, result: object, *, ok: bool) -> None:
        """Split what the item read: under its own path, its own (a later run may reuse its
        result while those are unchanged); anything else, the run's (any change there runs
        every item again). Its result is pickled here, on the core that ran it."""
        import pickle

        reads, self._item = self._item, None
        if reads is None:
            return
        prefix, own = key + os.sep, []
        for read in reads:
            path = read[1]
            if path == key or (isinstance(path, str) and path.startswith(prefix)):
                own.append(read)
            else:
                self.foreign[read] = None
        if not ok or len(self.chunks) != self._item_chunks:  # output of its own: run it again
            return
        on, self._on = self._on, False  # what pickling imports is no input of the run
        try:
            blob = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # an unpicklable result: the item is not kept
            return
        finally:
            self._on = on
        self.items[key] = (own, blob)

    def item_records(self) -> tuple[ItemRecord, ...]:
        """What the answer keeps of each item (``envkit.replay.items``)."""
        return item_records(self.items, self.reused, self.outside, self.foreign)

    # -- the run ---------------------------------------------------------------------------
    def watching(self) -> _Watch:
        return _Watch(self)

    def parts(self) -> tuple[bytes, ...]:
        """Every input with its identity now (or when :meth:`waiting` took it), packed: paths
        read or stat'ed, directories listed and each of their entries, and the file of every
        module the process imported; the inputs of the items reused from the store; then
        what the forked workers read, as they identified and packed it. :attr:`newest` is
        then the latest change among them."""
        seen = set(self._early)
        late = list(self._since(*self._early_marks, seen))
        for recalled in self.reused.values():
            for how, path, ident in recalled.inputs:
                if (how, path) not in seen:
                    seen.add((how, path))
                    late.append((how, path, ident))
        return (*self._early_parts, self._pack(late), *self.carried_parts)

    def inputs(self) -> tuple[Input, ...]:
        """What :meth:`parts` packs, unpacked (a process's inputs once; a path two processes
        looked at is in both their parts)."""
        return unpacked(self.parts())

    def _pack(self, found: list[Input]) -> bytes:
        for _, _, ident in found:
            if ident is not None and max(ident[4], ident[5]) > self.newest:
                self.newest = max(ident[4], ident[5])
        return packed(found)


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
        self._remembering = remembering(recorder)

    def __enter__(self) -> Recorder:
        r = self.r
        if not _Watch._hooked:  # once per process: an audit hook cannot be removed
            sys.addaudithook(_dispatcher(_Watch))
            _Watch._hooked = True
        _Watch._audit_installed = r
        self._saved = {"stat": os.stat, "lstat": os.lstat, "access": os.access,
                       "readlink": os.readlink, "scandir": os.scandir, "stdout": sys.stdout,
                       "stderr": sys.stderr, "environ": type(os.environ)}
        os.stat = r._stat_wrapper(os.stat, True)  # type: ignore[assignment]
        os.lstat = r._stat_wrapper(os.lstat, False)  # type: ignore[assignment]
        os.access = r._stat_wrapper(os.access, True)  # type: ignore[assignment]
        os.readlink = r._stat_wrapper(os.readlink, False)  # type: ignore[assignment]
        os.scandir = keeping_listings(os.scandir, r.scanned)  # type: ignore[assignment]
        sys.stdout = Tee(sys.stdout, 1, r.chunks)  # type: ignore[assignment]
        sys.stderr = Tee(sys.stderr, 2, r.chunks)  # type: ignore[assignment]
        RecordingEnviron._seen = r.env
        os.environ.__class__ = RecordingEnviron
        self._carrying.__enter__()
        self._remembering.__enter__()
        r._on = True
        return r

    def __exit__(self, *exc: object) -> None:
        r, saved = self.r, self._saved
        r._on = False
        self._remembering.__exit__(None, None, None)
        self._carrying.__exit__(None, None, None)
        _Watch._audit_installed = None
        os.stat, os.lstat = saved["stat"], saved["lstat"]
        os.access, os.readlink = saved["access"], saved["readlink"]
        os.scandir = saved["scandir"]
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = saved["stdout"], saved["stderr"]
        os.environ.__class__ = saved["environ"]
        RecordingEnviron._seen = None
