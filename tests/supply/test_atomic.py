"""envkit.supply.atomic: whole-directory swaps, temp dirs found by pid, no escaping writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envkit.supply import atomic
from envkit.supply.atomic import (
    EscapingPathError,
    InstallError,
    install,
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


# -- install: several outputs, all or none ---------------------------------------------------


def _staged(tmp_path: Path, final: Path, text: str) -> Path:
    staged = make_temp_dir(final)
    (staged / "f.txt").write_text(text)
    return staged


def _old(path: Path, text: str) -> Path:
    path.mkdir(parents=True)
    (path / "f.txt").write_text(text)
    return path


@pytest.mark.parametrize("kernel_swap", [True, False], ids=["renameat2", "two-renames"])
def test_install_replaces_every_output_and_removes_the_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_swap: bool
) -> None:
    if not kernel_swap:
        monkeypatch.setattr(atomic, "_rename2", lambda *_: False)
    pkg, data = _old(tmp_path / "pkg", "old pkg"), tmp_path / "data"
    pairs = [(_staged(tmp_path, pkg, "new pkg"), pkg), (_staged(tmp_path, data, "new data"), data)]
    install(pairs, replace=True)
    assert (pkg / "f.txt").read_text() == "new pkg"
    assert (data / "f.txt").read_text() == "new data"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "pkg"]


@pytest.mark.parametrize("kernel_swap", [True, False], ids=["renameat2", "two-renames"])
def test_install_puts_back_what_moved_when_a_later_output_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_swap: bool
) -> None:
    if not kernel_swap:
        monkeypatch.setattr(atomic, "_rename2", lambda *_: False)
    pkg, data = _old(tmp_path / "pkg", "old pkg"), _old(tmp_path / "data", "old data")
    staged_pkg = _staged(tmp_path, pkg, "new pkg")
    with pytest.raises(InstallError, match="could not move the output into place"):
        install([(staged_pkg, pkg), (tmp_path / "gone", data)], replace=True)
    assert (pkg / "f.txt").read_text() == "old pkg"
    assert (data / "f.txt").read_text() == "old data"
    assert (staged_pkg / "f.txt").read_text() == "new pkg"  # the caller's stack removes it


def test_install_without_replace_leaves_an_existing_output_alone(tmp_path: Path) -> None:
    pkg, data = tmp_path / "pkg", _old(tmp_path / "data", "theirs")
    pairs = [(_staged(tmp_path, pkg, "new"), pkg), (_staged(tmp_path, data, "new"), data)]
    with pytest.raises(InstallError, match="--force"):
        install(pairs, replace=False)
    assert not pkg.exists()
    assert (data / "f.txt").read_text() == "theirs"


def test_a_free_name_taken_meanwhile_is_not_overwritten(tmp_path: Path) -> None:
    """``RENAME_NOREPLACE``: an output that appears between the check and the rename (another
    run) makes the move fail instead of replacing it."""
    staged, final = _staged(tmp_path, tmp_path / "pkg", "new"), _old(tmp_path / "pkg", "theirs")
    try:
        moved = atomic._rename2(staged, final, atomic._RENAME_NOREPLACE)
    except FileExistsError:
        moved = None
    if moved is False:
        pytest.skip("renameat2(RENAME_NOREPLACE) is not supported on this filesystem")
    assert moved is None
    assert (final / "f.txt").read_text() == "theirs"


def test_a_backup_left_by_a_killed_run_does_not_block_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The converter's old install renamed the output to a fixed ``.pkg.envkit-old``; a run
    killed after that step made every later ``--force`` fail. Backups now carry the pid, so
    ``stale_temp_dirs`` finds them."""
    monkeypatch.setattr(atomic, "_rename2", lambda *_: False)
    pkg = _old(tmp_path / "pkg", "old")
    _old(tmp_path / ".pkg.envkit-old", "left by a killed run")
    _old(tmp_path / f"{atomic.TMP_PREFIX}pkg-{os.getpid()}-old", "left by a killed run")
    install([(_staged(tmp_path, pkg, "new"), pkg)], replace=True)
    assert (pkg / "f.txt").read_text() == "new"
