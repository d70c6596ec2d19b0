"""The leak check of the Ray/Gym tests finds a marked survivor and ignores unmarked processes."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("psutil")

from support.proc_marks import new_mark, survivors


def test_a_marked_child_is_a_survivor_until_it_exits(monkeypatch):
    mark = new_mark(monkeypatch)
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    child = subprocess.Popen(sleeper)
    try:
        found = survivors(mark, wait_s=0)
        assert [line.split()[0] for line in found] == [str(child.pid)]
        assert survivors(new_mark(monkeypatch), wait_s=0) == []  # another run's mark
    finally:
        child.kill()
        child.wait()
    assert survivors(mark, wait_s=0) == []
