"""envkit.supply.root: where the cache lives, and a cache file written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envkit.supply.root import cache_dir, write_whole


def test_the_cache_dir_is_the_env_var_then_xdg_then_home(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    monkeypatch.setenv("ENVKIT_CACHE_DIR", str(tmp_path / "a"))
    assert cache_dir() == str(tmp_path / "a")
    monkeypatch.delenv("ENVKIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir() == str(tmp_path / "x" / "envkit")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert cache_dir() == str(tmp_path / "h" / ".cache" / "envkit")


def test_write_whole_makes_the_folder_and_replaces_an_entry(tmp_path: Path) -> None:
    entry = tmp_path / "new" / "deeper" / "entry"
    write_whole(str(entry), b"first")
    assert entry.read_bytes() == b"first"
    write_whole(str(entry), b"second, longer")
    assert entry.read_bytes() == b"second, longer"
    assert sorted(p.name for p in entry.parent.iterdir()) == ["entry"]  # no temp left


def test_write_whole_writes_more_than_one_write_call_takes(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024)
    write_whole(str(tmp_path / "big"), data)
    assert (tmp_path / "big").read_bytes() == data


def test_a_failed_rename_leaves_no_temp_and_keeps_the_old_entry(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    entry.mkdir()  # a directory where the file goes: the rename fails, even for root
    (entry / "inside").write_bytes(b"kept")
    write_whole(str(entry), b"new")
    assert (entry / "inside").read_bytes() == b"kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry"]


def test_envkit_no_cache_shuts_every_store_at_its_one_reader_and_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every store (tree stamps, wheel facts, resolutions) reads and writes through
    ``read_entry``/``write_entry``: under ``ENVKIT_NO_CACHE`` a sealed entry of this user's is a
    miss and nothing new is written, whichever command runs."""
    from envkit.supply.root import read_entry, write_entry

    store = str(tmp_path / "store")
    write_entry(store, "ab/kept.json", b"{}")
    assert read_entry(store, "ab/kept.json") == b"{}"
    monkeypatch.setenv("ENVKIT_NO_CACHE", "1")
    assert read_entry(store, "ab/kept.json") is None
    write_entry(store, "cd/new.json", b"{}")
    assert not (tmp_path / "store" / "cd").exists()
    monkeypatch.setenv("ENVKIT_NO_CACHE", "0")
    assert read_entry(store, "ab/kept.json") == b"{}"
