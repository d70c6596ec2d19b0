"""Validate many packages on every core: ``fork_map`` runs a function over shares of a list in
forked copies of this process and returns the results in the list's order.

Why fork, not a pool: a validate run is import-bound (click, PyYAML, the rules) and its
packages are independent; a forked worker starts with everything already imported, so a
second core is worth ~40% of the wall time of a tree of 145 packages for the price of one
``fork`` and one pickle of its reports, where a spawned pool would import it all again. ruff
checks files on every core for the same reason.

What stays as in one process:

- results come back in the items' order, and the output is byte for byte the serial one;
- an item whose function raised in a worker is run again here, in the parent, so the caller
  sees the very exception a serial run raises (no exception is pickled across), first in item
  order; so is every item of a worker that died or whose results could not be pickled;
- state other code keeps about the run (the replay recorder's inputs) is carried back by a
  :class:`Carrier` registered for the run's duration: a worker's reads are the run's reads.

The items are taken from one queue (a pipe of item numbers, filled before the fork), not split
in fixed shares: the packages of a tree differ tenfold in cost, and the parent has more to do
than a worker (it identifies what it read while it waits), so fixed halves left one core idle
for ~30 ms of the tree's ~200.

Forks only where it is safe and pays: on Linux, with one thread in the process, and with at
least ``MIN_SHARE`` items per worker.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

__all__ = ["MEMO_ITEMS", "MIN_SHARE", "Carrier", "Memo", "available_workers", "carrying",
           "fork_map", "remembering"]

T = TypeVar("T")
R = TypeVar("R")

MIN_SHARE = 8
"""Items per worker below which a fork (a few ms, and a pickle of the results) does not pay."""

MEMO_ITEMS = 2 * MIN_SHARE
"""Items below which a memo is not asked: re-running a few packages costs less than keeping
each one's result and inputs (a pickle each, and the imports for it)."""

_FAILED = object()
"""A worker's mark for an item the parent must run itself."""


class Carrier(Protocol):
    """State a forked worker carries back to its parent."""

    def before_fork(self) -> None:
        """In the parent, just before each fork ``fork_map`` makes."""

    def forked(self) -> None:
        """In the worker, right after the fork: what follows is the worker's own."""

    def waiting(self) -> None:
        """In the parent, its own share done, before it waits for the workers: work it would
        do at the run's end that can be done now (the workers' tail is the run's wall time)."""

    def carried(self) -> object:
        """In the worker, at its end: what the parent must :meth:`merge` (picklable)."""

    def merge(self, state: object) -> None:
        """In the parent: take a worker's :meth:`carried` state as its own."""


_carriers: list[Carrier] = []
"""Registered by :func:`carrying` for a run (a fork copies the process, so the copy must be
told, by the process, what it has to hand back)."""


@contextlib.contextmanager
def carrying(carrier: Carrier) -> Iterator[None]:
    """Carry ``carrier``'s state back from every worker forked inside the block."""
    _carriers.append(carrier)
    try:
        yield
    finally:
        _carriers.remove(carrier)


class Memo(Protocol):
    """Results of items from an earlier run that still hold, and where each item of this run
    starts and ends (``fork_map`` with ``keys``)."""

    def recall(self, keys: Sequence[str]) -> Mapping[int, object]:
        """In the parent, before any item runs: ``{index: result}`` of the items not to run."""

    def begin(self, key: str) -> None:
        """In the process about to run the item named ``key``."""

    def end(self, key: str, result: object, *, ok: bool) -> None:
        """Right after it: its result (``ok``), or it raised."""


_memos: list[Memo] = []
"""Registered by :func:`remembering` for a run."""


@contextlib.contextmanager
def remembering(memo: Memo) -> Iterator[None]:
    """Let ``memo`` answer and watch the items of every ``fork_map`` given ``keys`` inside the
    block."""
    _memos.append(memo)
    try:
        yield
    finally:
        _memos.remove(memo)


def available_workers() -> int:
    """The cores this process may run on (its CPU affinity, as ``nproc`` counts them)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def fork_map(func: Callable[[T], R], items: Sequence[T], workers: int | None = None,
             keys: Sequence[str] | None = None) -> list[R]:
    """``[func(item) for item in items]``, the items shared among up to ``workers`` processes
    (default: :func:`available_workers`), this one included.

    ``keys``: a stable name per item (a package's path as given). With them, a :class:`Memo`
    registered for the run answers the items it still knows from an earlier run, and sees where
    every other item starts and ends, in whichever process runs it.

    ``func`` must not write to stdout or stderr in a worker: its output would reach the
    terminal out of order (the replay recorder keeps it, in the worker's order).
    """
    memo = _memos[-1] if _memos and keys is not None and len(items) >= MEMO_ITEMS else None
    results: list[object] = [_FAILED] * len(items)
    if memo is not None and keys is not None:
        for i, result in memo.recall(keys).items():
            results[i] = result
        call: Callable[[int], object] = _remembered(func, items, keys, memo)
    else:
        call = lambda i: func(items[i])  # noqa: E731 - the plain case of the line above
    todo = [i for i, result in enumerate(results) if result is _FAILED]
    count = min(workers or available_workers(), len(todo) // MIN_SHARE)
    if count < 2 or not _can_fork():
        for i in todo:
            results[i] = call(i)
        return results  # type: ignore[return-value]
    raised: dict[int, Exception] = {}
    children: list[tuple[int, int]] = []
    queue = _Queue(todo)
    try:
        for _ in range(count - 1):
            children.append(_start(call, queue))
        for i in queue:
            try:
                results[i] = call(i)
            except Exception as exc:  # raised below if no earlier item raises first
                raised[i] = exc
                break
        queue.close()
        for carrier in _carriers:
            carrier.waiting()
        for pid, fd in children:
            _collect(pid, fd, results)
        children.clear()
    finally:  # an interrupt here: stop the workers, leave nothing behind
        queue.close()
        for pid, fd in children:
            _stop(pid, fd)
    for i, result in enumerate(results):
        if i in raised:
            raise raised[i]
        if result is _FAILED:
            results[i] = call(i)  # raises here, in order, as a serial run would
    return results  # type: ignore[return-value]


def _remembered(func: Callable[[T], R], items: Sequence[T], keys: Sequence[str],
                memo: Memo) -> Callable[[int], object]:
    def call(i: int) -> object:
        memo.begin(keys[i])
        try:
            result = func(items[i])
        except BaseException:
            memo.end(keys[i], None, ok=False)
            raise
        memo.end(keys[i], result, ok=True)
        return result

    return call


class _Queue:
    """The item numbers, in order, for whichever process asks next: a pipe written whole before
    the fork and closed for writing, so a read of one number is atomic between readers and an
    empty read means the queue is done.

    Numbers are of chunks (at most ``_TOKENS``, two bytes each: 2 KiB, under the smallest pipe
    a busy system gives, one page), so filling it never blocks; a tree of a few hundred
    packages has one package per chunk.
    """

    _TOKENS = 1024

    def __init__(self, indices: Sequence[int]) -> None:
        self.indices, size = indices, len(indices)
        self.size = size
        self.chunks = min(size, self._TOKENS)
        self._fd, write_fd = os.pipe()
        try:
            os.write(write_fd, b"".join(k.to_bytes(2, "little") for k in range(self.chunks)))
        finally:
            os.close(write_fd)

    def __iter__(self) -> Iterator[int]:
        while self._fd >= 0 and len(token := os.read(self._fd, 2)) == 2:
            k = int.from_bytes(token, "little")
            yield from self.indices[k * self.size // self.chunks:
                                    (k + 1) * self.size // self.chunks]

    def close(self) -> None:
        """Take no more (what is left goes to the other processes, or is run at the end)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _can_fork() -> bool:
    """Linux only (macOS frameworks are not fork-safe), and no other Python thread whose locks
    a worker could inherit held. Threads a native library started (Ray's, OpenMP's) are not
    seen here; envkit forks only from ``envkit validate`` over 16 packages or more, before any
    such library is loaded (a worker never calls into one). A process that never imported
    ``threading`` started no thread through it: it is not imported to count none (~0.5 ms
    before the fork)."""
    threading = sys.modules.get("threading")
    return sys.platform == "linux" and (threading is None or threading.active_count() == 1)


def _start(call: Callable[[int], object], queue: _Queue) -> tuple[int, int]:
    for stream in (sys.stdout, sys.stderr):  # or a worker flushes the parent's buffers again
        stream.flush()
    for carrier in _carriers:
        carrier.before_fork()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: never returns
        os.close(read_fd)
        _work(call, queue, write_fd)
    os.close(write_fd)
    return pid, read_fd


def _work(call: Callable[[int], object], queue: _Queue, fd: int) -> None:
    import pickle  # here, not at the top: a run of a few packages never forks

    status = 1
    try:
        for carrier in _carriers:
            carrier.forked()
        done: dict[int, object] = {}
        for i in queue:
            try:
                done[i] = call(i)
            except BaseException:  # the parent runs it again and raises it
                break
        queue.close()
        state = [carrier.carried() for carrier in _carriers]
        try:
            data = pickle.dumps((done, state), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # unpicklable results: the parent runs them all
            data = pickle.dumps(({}, state), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:  # os.write, not open(fd): opening a descriptor reads as stdin to a recorder
            view = view[os.write(fd, view):]
        status = 0
    finally:
        os._exit(status)  # no atexit handlers, no second flush of inherited buffers


def _collect(pid: int, fd: int, results: list[object]) -> None:
    """A worker's results into ``results``; its carried state to the carriers. A worker that
    died leaves its items ``_FAILED`` (the parent runs them)."""
    import pickle

    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    with contextlib.suppress(ChildProcessError):  # reaped by a SIGCHLD handler of the caller's
        os.waitpid(pid, 0)
    data = b"".join(chunks)
    try:
        done, state = pickle.loads(data)  # our own fork's bytes
    except Exception:  # a worker killed mid-write
        return
    for i, result in done.items():
        results[i] = result
    for carrier, carried in zip(_carriers, state, strict=True):
        carrier.merge(carried)


def _stop(pid: int, fd: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, 9)
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
