"""A recorded run's ``os.scandir`` listings name the listed directories' entries, with the
stats the run's reader took: identification lists nothing again and stats only what nobody
stat'ed (``envkit.replay.listings``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envkit.replay.record import Recorder
from envkit.replay.store import LISTED, LSTAT, identity


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        (root / name).write_text(name)
    (root / "link").symlink_to("a.txt")
    return root


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """``os.listdir`` and ``os.lstat`` calls from here on, by path."""
    calls: dict[str, list[str]] = {"listdir": [], "lstat": []}
    for name in calls:
        real = getattr(os, name)

        def counted(path, *args, _real=real, _name=name, **kwargs):  # type: ignore[no-untyped-def]
            calls[_name].append(os.fsdecode(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, counted)
    return calls


def _walked(root: Path) -> None:
    """A walk as the package model's: scandir to the end, a stat of each file."""
    with os.scandir(root) as it:
        for entry in it:
            if entry.is_file(follow_symlinks=False):
                entry.stat(follow_symlinks=False)


def test_a_listing_read_to_the_end_is_not_listed_again_and_its_stats_are_reused(
        tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder(ignore=str(tmp_path / "cache"))
    with recorder.watching():
        _walked(tree)
    calls = _counting(monkeypatch)
    found = {(how, os.fsdecode(path)): ident for how, path, ident in recorder.inputs()}
    monkeypatch.undo()
    assert calls["listdir"] == []
    names = ("a.txt", "b.txt", "sub", "link")
    for name in names:  # every entry, as identity() takes it now (nothing changed)
        path = str(tree / name)
        assert found[(LSTAT, path)] == identity(path, LSTAT), name
    assert found[(LISTED, str(tree))] == identity(str(tree), LISTED)
    assert calls["lstat"] == []  # each entry's stat is its DirEntry's (the walk's, for files)


def test_an_entry_changed_after_the_walk_stat_it_keeps_the_older_identity(
        tree: Path, tmp_path: Path) -> None:
    """The stat the run's reader took is older than what it read, never newer: a file
    rewritten after it is a miss on the next check, never a stale answer."""
    recorder = Recorder(ignore=str(tmp_path / "cache"))
    with recorder.watching():
        _walked(tree)
        before = identity(str(tree / "a.txt"), LSTAT)
    (tree / "a.txt").write_text("a longer text than before")
    found = {(how, os.fsdecode(path)): ident for how, path, ident in recorder.inputs()}
    assert found[(LSTAT, str(tree / "a.txt"))] == before
    assert before != identity(str(tree / "a.txt"), LSTAT)


def test_a_listing_left_before_its_end_is_listed_again(
        tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder(ignore=str(tmp_path / "cache"))
    with recorder.watching(), os.scandir(tree) as it:
        next(it)
    calls = _counting(monkeypatch)
    found = {(how, os.fsdecode(path)) for how, path, _ in recorder.inputs()}
    monkeypatch.undo()
    assert calls["listdir"] == [str(tree)]
    assert {(LSTAT, str(tree / n)) for n in ("a.txt", "b.txt", "sub", "link")} <= found


def test_the_current_directory_a_descriptor_and_the_watch_end(
        tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.scandir()`` is the audit event's ``.``; a descriptor's listing passes through
    unkept; the original ``os.scandir`` is back after the watch."""
    original = os.scandir
    monkeypatch.chdir(tree)
    recorder = Recorder(ignore=str(tmp_path / "cache"))
    fd = os.open(tree / "sub", os.O_RDONLY)
    try:
        with recorder.watching():
            assert {e.name for e in os.scandir()} == {"a.txt", "b.txt", "sub", "link"}
            listing = os.scandir(fd)
            assert [e.name for e in listing] == ["c.txt"]
    finally:
        os.close(fd)
    assert os.scandir is original
    assert set(recorder.scanned) == {"."}
    assert recorder.impure is None
