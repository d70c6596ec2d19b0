"""Validate many packages on every core: ``fork_map`` runs a function over a list in forked
copies of this process and returns the results in the list's order.

Why fork, not a pool: a validate run is import-bound (click, PyYAML, the rules); a forked
worker starts with everything imported, where a spawned pool would import it all again.

Results come back in the items' order, byte for byte the serial output. An item that raised in
a worker, and every item of a worker that died or whose results could not be pickled, is run
again in the parent, so the caller sees the exception a serial run raises (none is pickled).
Results cross only a pipe from a worker this call forked, so unpickling trusts only this
process's own copy. Items come from one queue, not fixed shares: packages differ tenfold in
cost. Forks only on Linux, with one thread, and at least ``MIN_SHARE`` items per worker.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

__all__ = ["MIN_SHARE", "fork_map"]

T = TypeVar("T")
R = TypeVar("R")

MIN_SHARE = 8
"""Items per worker below which a fork (and a pickle of the results) does not pay."""

_FAILED = object()
"""A worker's mark for an item the parent must run itself."""


def fork_map(func: Callable[[T], R], items: Sequence[T], workers: int | None = None) -> list[R]:
    """``[func(item) for item in items]``, the items shared among up to ``workers`` processes
    (default: the cores this process may run on, as ``nproc`` counts them), this one included.

    ``func`` must not write to stdout or stderr in a worker: its output would reach the
    terminal out of order.
    """
    results: list[object] = [_FAILED] * len(items)

    def call(i: int) -> object:
        return func(items[i])

    todo = list(range(len(items)))
    if not workers:
        try:
            workers = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # pragma: no cover - not Linux
            workers = os.cpu_count() or 1
    count = min(workers, len(todo) // MIN_SHARE)
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


class _Queue:
    """The item numbers, in order, for whichever process asks next: a pipe written whole before
    the fork and closed for writing, so a read of one number is atomic between readers and an
    empty read means the queue is done. Numbers are of chunks (at most ``_TOKENS``, two bytes
    each: under one page, the smallest pipe), so filling it never blocks.
    """

    _TOKENS = 1024

    def __init__(self, indices: Sequence[int]) -> None:
        self.indices, self.size = indices, len(indices)
        self.chunks = min(self.size, self._TOKENS)
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
    a worker could inherit held. Native libraries' threads (Ray's) are not seen here; envkit
    forks only from ``envkit validate``, before any such library is loaded. ``threading`` is not
    imported to count none."""
    threading = sys.modules.get("threading")
    return sys.platform == "linux" and (threading is None or threading.active_count() == 1)


def _start(call: Callable[[int], object], queue: _Queue) -> tuple[int, int]:
    for stream in (sys.stdout, sys.stderr):  # or a worker flushes the parent's buffers again
        stream.flush()
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
        done: dict[int, object] = {}
        for i in queue:
            try:
                done[i] = call(i)
            except BaseException:  # the parent runs it again and raises it
                break
        queue.close()
        try:
            data = pickle.dumps(done, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # unpicklable results: the parent runs them all
            data = pickle.dumps({}, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        status = 0
    finally:
        os._exit(status)  # no atexit handlers, no second flush of inherited buffers


def _collect(pid: int, fd: int, results: list[object]) -> None:
    """A worker's results into ``results``. A worker that died leaves its items ``_FAILED``
    (the parent runs them)."""
    import pickle

    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.close(fd)
    with contextlib.suppress(ChildProcessError):  # reaped by a SIGCHLD handler of the caller's
        os.waitpid(pid, 0)
    data = b"".join(chunks)
    try:
        done = pickle.loads(data)  # this call's own fork's bytes, over its own pipe
    except Exception:  # a worker killed mid-write
        return
    for i, result in done.items():
        results[i] = result


def _stop(pid: int, fd: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, 9)
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
