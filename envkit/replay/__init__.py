"""The ``envkit`` process entry: answer ``envkit validate`` from its last run when nothing that
run depended on has changed; run the CLI otherwise.

Why: a pre-commit hook or a CI gate runs ``envkit validate`` over packages that mostly did not
change since the last run, and importing click, PyYAML and the rules costs about five times the
interpreter's own start (the small gate: ~590 M instructions, ~90 M of them Python's). ruff
keeps a file's diagnostics while the file is unchanged; envkit keeps a whole validate run's
answer -- its stdout and stderr, in order, and its exit status -- while all of this is unchanged:

- the interpreter, the command line, the working directory, which streams are terminals and
  their sizes, and the ``PYTHON*``/locale variables (the :class:`~envkit.replay.store.Key`);
- every environment variable the run read, found or not;
- the identity (mode, inode, device, size, mtime, ctime) of every path the run opened,
  stat'ed or listed -- the package's files, settings files looked for and not found, the
  wheels, the dataset and job -- of every entry of each directory it listed, and of the file of
  every module it imported (envkit's own sources and its dependencies: an upgrade is a miss).

What the run read is observed, not declared (:mod:`envkit.replay.record`): a new rule that
reads a new file needs no change here. A run is stored only when its answer is a function of
those inputs: no subprocess (``--smoke``/``--probe``), no socket, no write outside envkit's
cache (``-o FILE``), no ``chdir``, no read of a file descriptor (stdin), exit status 0 or 1 (an
internal error or an interrupt is never replayed), and no input changed later than 2 s before
the run started (git's racily-clean rule: a same-size rewrite within one timestamp tick would
keep the stat). ``--no-cache`` or ``ENVKIT_NO_CACHE=1`` runs without reading or writing the store
(``$ENVKIT_CACHE_DIR/replay``).

A run over a tree of packages (16 or more) keeps each package's result with what that package
read under its own path: when every other input is unchanged and only some packages' own files
changed (a pre-commit run after an edit), those packages are validated again and the others'
results come from the store; the output is printed anew, the same bytes a fresh run prints.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING

from envkit.replay.store import Answer, Key, Recalled, load, save
from envkit.supply.root import cache_dir

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["RACY_NS", "VALIDATE_GC_THRESHOLD", "exit_now", "main", "run"]

RACY_NS = 2_000_000_000
"""A run with an input changed later than this before it started is answered, not stored."""

VALIDATE_GC_THRESHOLD = 200_000
"""The cyclic collector's young-generation threshold for a validate process (Python's: 700)."""


def main() -> None:
    """The console script (``envkit``) and ``python -m envkit``."""
    args = sys.argv[1:]
    validate = args[:1] == ["validate"]
    if validate:
        _fewer_collections()
    sys.exit(run(args, finish=exit_now if validate else None))


def _fewer_collections() -> None:
    """Let the cyclic collector run less often in a validate process.

    Why: a validate run allocates hundreds of thousands of short-lived containers (YAML data,
    the models, reports) and makes almost no reference cycles (33 objects over Gym's 145
    packages), so nearly every pass of the collector finds nothing; its passes over the young
    objects cost ~11 ms of the tree's ~400 ms CPU, and in a forked worker they write to pages
    it shares with its parent. A young generation of 200,000 objects (mypy's choice for the
    same reason) still bounds what a pathological input's cycles could hold.
    """
    _, middle, old = gc.get_threshold()
    gc.set_threshold(VALIDATE_GC_THRESHOLD, middle, old)


def exit_now(status: int) -> None:
    """End the process at once with ``status`` when the interpreter's teardown has nothing to
    do but free memory; otherwise return (and the caller exits as usual).

    Why: freeing every module and object at exit cost ~8 ms, a seventh of validating a small
    package, each time a hook runs. Nothing is skipped that a run needs: stdout and stderr are
    flushed first (a flush that fails returns here, so the usual exit reports it), and it only
    happens when no ``atexit`` callback is registered (coverage, logging, a temporary
    directory's finalizer would be) and no other thread runs.
    """
    import atexit

    callbacks = getattr(atexit, "_ncallbacks", None)  # CPython's; elsewhere: the usual exit
    threading = sys.modules.get("threading")
    if callbacks is None or callbacks() or (threading and threading.active_count() > 1):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: the usual exit says so (status 120)
        return
    os._exit(status)


def run(args: list[str], finish: Callable[[int], None] | None = None) -> int:
    """Run ``envkit ARGS`` in this process, answering from the store when it may.

    ``finish`` is called with the status before the run lets go of what it read and recorded
    (``exit_now``: a process that ends there never frees it; ~2 ms of a first run over Gym's
    145 packages went to freeing the recorder after the answer was stored).
    """
    finish = finish or _go_on
    if not _replayable(args):
        status = _cli(args)
        finish(status)
        return status
    where = os.path.join(cache_dir(), "replay")
    key = Key.now(args)
    answer = load(key, where)
    recalled: dict[str, Recalled] = {}
    if answer is not None:
        stale = answer.stale()
        if stale == frozenset():
            status = answer.replay()
            finish(status)
            return status
        if stale is not None:  # only some packages' own files changed: the rest are reused
            recalled = answer.recalled(stale)
    return _record(args, key, where, recalled, finish)


def _go_on(status: int) -> None:
    """No ``finish``: the caller goes on after the run."""


def _replayable(args: list[str]) -> bool:
    """Only ``envkit validate`` without ``--no-cache``, ``--smoke``, ``--probe`` or ``-``
    (stdin), and not with ``ENVKIT_NO_CACHE`` set."""
    return (bool(args) and args[0] == "validate" and not os.environ.get("ENVKIT_NO_CACHE")
            and not {"--no-cache", "--smoke", "--probe", "-"} & set(args))


def _cli(args: list[str]) -> int:
    from envkit.cli import main as cli_main

    return cli_main(args)


def _record(args: list[str], key: Key, where: str, recalled: dict[str, Recalled],
            finish: Callable[[int], None]) -> int:
    from envkit.replay.record import Recorder

    recorder = Recorder(ignore=os.path.dirname(where))
    recorder.recalled = recalled
    with recorder.watching():
        status = _cli(args)
    if status in (0, 1) and recorder.impure is None:
        parts = recorder.parts()
        if recorder.newest <= recorder.started_ns - RACY_NS:
            answer = Answer(tuple(recorder.env.items()), parts, tuple(recorder.chunks), status,
                            recorder.item_records())
            save(key, answer, where)
    finish(status)
    return status
