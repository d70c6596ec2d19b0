"""envkit.supply.atomic: whole-directory swaps, temp dirs found by pid, no escaping writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envkit.supply.atomic import (
    EscapingPathError,
    make_temp_dir,
    stale_temp_dirs,
    swap_into_place,
    write_files,
)


def test_swap_replaces_a_non_empty_directory_and_leaves_no_temp(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    (out / "wheels").mkdir(parents=True)
    (out / "wheels" / "old-1.0-py3-none-any.whl").write_bytes(b"old")
    tmp = make_temp_dir(out)
    write_files(tmp, {"wheels/new-2.0-py3-none-any.whl": b"new", "a/b.txt": b"x"})
    swap_into_place(tmp, out)
    assert sorted(p.name for p in (out / "wheels").iterdir()) == ["new-2.0-py3-none-any.whl"]
    assert (out / "a" / "b.txt").read_bytes() == b"x"
    assert not list(tmp_path.glob(".envkit-tmp-*"))


def test_stale_dirs_are_those_of_dead_processes(tmp_path: Path) -> None:
    dead = tmp_path / ".envkit-tmp-pkg-999999999-abcd_123"
    live = tmp_path / f".envkit-tmp-pkg-{os.getppid()}-abcd_123"
    dead.mkdir()
    live.mkdir()
    assert stale_temp_dirs(tmp_path) == [dead]


def test_write_files_refuses_paths_that_escape(tmp_path: Path) -> None:
    with pytest.raises(EscapingPathError, match="escapes"):
        write_files(tmp_path / "root", {"../evil.py": b"x"})
    assert not (tmp_path / "evil.py").exists()
