"""Many packages on every core (``envkit.validate.workers``): the same results, in the same order,
the same exception first in item order, nothing lost when a worker dies."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.paths import REPO_ROOT

from envkit.validate import workers
from envkit.validate.gate import GateRequest, run_gate
from envkit.validate.workers import MIN_SHARE, fork_map

PACKAGES = REPO_ROOT / "fixtures" / "packages"
PARENT = os.getpid()


@pytest.fixture(autouse=True)
def _forks_whatever_else_runs(request: pytest.FixtureRequest,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread another test left running in this pytest process would make every run here a
    serial one; only the test of that check sees it."""
    if "thread" not in request.node.name:
        monkeypatch.setattr(workers, "_can_fork", lambda: True)


def _where(item: int) -> tuple[int, int]:
    return item * item, os.getpid()


def test_results_come_back_in_order_from_every_worker(tmp_path: Path) -> None:
    """Each process holds its first item until all three have one, so a loaded machine that
    schedules a forked worker late cannot leave it without work."""

    def once_all_have_started(item: int) -> tuple[int, int]:
        (tmp_path / str(os.getpid())).touch()
        deadline = time.monotonic() + 30
        while len(list(tmp_path.iterdir())) < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        return _where(item)

    items = list(range(3 * MIN_SHARE))
    results = fork_map(once_all_have_started, items, workers=3)
    assert [square for square, _ in results] == [i * i for i in items]
    pids = {pid for _, pid in results}
    assert len(pids) == 3 and os.getpid() in pids


def test_a_slow_item_holds_back_no_other() -> None:
    """The items are taken one by one from a queue: while one process is on the slow item, the
    others take every other one (fixed shares would leave half of them waiting behind it)."""

    def first_is_slow(item: int) -> tuple[int, int]:
        if item == 0:
            time.sleep(1)
        return _where(item)

    results = fork_map(first_is_slow, list(range(2 * MIN_SHARE)), workers=2)
    assert [square for square, _ in results] == [i * i for i in range(2 * MIN_SHARE)]
    slow = results[0][1]
    assert all(pid != slow for _, pid in results[1:])


def test_too_few_items_for_a_second_worker_run_here() -> None:
    results = fork_map(_where, list(range(2 * MIN_SHARE - 1)), workers=4)
    assert {pid for _, pid in results} == {os.getpid()}


def test_another_thread_keeps_the_run_in_one_process() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        results = fork_map(_where, list(range(4 * MIN_SHARE)), workers=2)
    finally:
        stop.set()
        thread.join()
    assert {pid for _, pid in results} == {os.getpid()}


def test_a_process_that_never_imported_threading_forks_without_importing_it() -> None:
    code = ("import os, sys, time\nfrom envkit.validate.workers import MIN_SHARE, fork_map\n"
            "def where(i):\n    time.sleep(0.01)\n    return os.getpid()\n"
            "pids = set(fork_map(where, list(range(4 * MIN_SHARE)), 2))\n"
            "print(len(pids), 'threading' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.stdout.split() == ["2", "False"], done.stderr


def test_the_first_exception_in_item_order_is_raised_here_as_a_serial_run_raises_it() -> None:
    def fails(item: int) -> int:
        if item in (5, 20):  # whichever process takes them
            msg = f"item {item} in process {os.getpid()}"
            raise ValueError(msg)
        return item

    with pytest.raises(ValueError, match=rf"^item 5 in process {os.getpid()}$"):
        fork_map(fails, list(range(4 * MIN_SHARE)), workers=2)


def test_items_of_a_worker_that_died_or_returned_unpicklable_results_are_run_here() -> None:
    def dies_in_a_worker(item: int) -> tuple[int, Any]:
        if os.getpid() != PARENT and item == 3:
            os._exit(9)
        if os.getpid() != PARENT and item == 5:
            return item, lambda: None  # cannot be pickled
        return item, None

    results = fork_map(dies_in_a_worker, list(range(4 * MIN_SHARE)), workers=4)
    assert [item for item, _ in results] == list(range(4 * MIN_SHARE))


@pytest.fixture
def many(tmp_path: Path) -> list[Path]:
    """Twice ``MIN_SHARE`` packages, valid and invalid ones in both shares."""
    names = sorted(p.name for p in PACKAGES.iterdir() if (p / "pkg").is_dir())
    picked = [*names[: 2 * MIN_SHARE - 2], "valid-native-v1", "valid-wheels-v1"]
    return [Path(shutil.copytree(PACKAGES / n / "pkg", tmp_path / f"{i:02d}-{n}"))
            for i, n in enumerate(picked)]


def test_a_tree_validated_by_two_workers_reports_what_one_process_reports(
        many: list[Path]) -> None:
    paths = tuple(many)
    serial = run_gate(GateRequest(paths=paths, workers=1))
    forked = run_gate(GateRequest(paths=paths, workers=2))
    assert forked == serial
    assert {r.valid for r in serial.reports} == {True, False}
