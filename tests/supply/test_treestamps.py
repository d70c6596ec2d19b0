"""A tree's file hashes kept between runs (``envkit.supply.treestamps``): an unchanged file is
not read again, a rewritten or replaced one is, a file too new or too small is never kept, and
EK209 sees a package changed after a validate that kept its stamps."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.check.validate import ValidateRequest, validate
from envkit.model import tree as tree_module
from envkit.model.tree import hash_files, walk_files
from envkit.supply import treestamps
from envkit.supply.provenance import package_record, write_provenance
from envkit.supply.treestamps import rescan

NATIVE = REPO_ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"


def _scan(root: Path, store: Path):  # type: ignore[no-untyped-def]
    return rescan(root, "test", lambda stamps: hash_files(root, walk_files(root), "test", stamps),
                  store)


def _entry(store: Path) -> Path:
    [entry] = store.rglob("*.json")
    return entry


@pytest.fixture
def files(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha")
    (root / "sub" / "b.bin").write_bytes(b"\x00" * 4096)
    an_hour_ago = time.time_ns() - 3600 * 10**9  # a rewrite below cannot share the mtime's tick
    for file in (root / "a.txt", root / "sub" / "b.bin"):
        os.utime(file, ns=(an_hour_ago, an_hour_ago))
    return root


def _every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every file's stamp, however new or small (the defaults keep neither here)."""
    monkeypatch.setattr(treestamps, "RACY_S", 0.0)
    monkeypatch.setattr(treestamps, "MIN_BYTES", 0)


def _no_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: object) -> str:
        raise AssertionError(f"{path} was read again")

    monkeypatch.setattr(tree_module, "sha256_file", refuse)


def test_an_unchanged_tree_is_hashed_from_its_stamps(files: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _every_file(monkeypatch)
    first = _scan(files, tmp_path / "store")
    _no_reads(monkeypatch)
    again = _scan(files, tmp_path / "store")
    assert again.digest == first.digest and again.files == first.files


def test_the_same_tree_by_another_path_is_hashed_from_its_stamps(
        files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _every_file(monkeypatch)
    first = _scan(files, tmp_path / "store")
    link = tmp_path / "link"
    link.symlink_to(files)
    _no_reads(monkeypatch)
    assert _scan(link, tmp_path / "store").digest == first.digest
    assert len(list((tmp_path / "store").rglob("*.json"))) == 1


def test_a_copy_of_a_tree_is_another_tree(files: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _every_file(monkeypatch)
    _scan(files, tmp_path / "store")
    copy = Path(shutil.copytree(files, tmp_path / "copy"))
    read: list[str] = []
    real = tree_module.sha256_file
    monkeypatch.setattr(tree_module, "sha256_file", lambda p: read.append(str(p)) or real(p))
    assert _scan(copy, tmp_path / "store").digest == _scan(files, tmp_path / "other").digest
    assert len(read) == 4  # the copy's two files, then the original's into a fresh store


def test_a_rewrite_or_a_replaced_file_is_read_again_a_new_link_is_not(
        files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A same-size rewrite moves the mtime; a file replaced by a rename is another inode, even
    with the old size and mtime; a hard link (a smoke's run copy) moves only the ctime."""
    _every_file(monkeypatch)
    store = tmp_path / "store"
    first = _scan(files, store)
    target = files / "a.txt"
    before = target.stat()
    os.link(target, tmp_path / "run-copy-link")
    _no_reads(monkeypatch)
    assert _scan(files, store).digest == first.digest
    monkeypatch.undo()
    _every_file(monkeypatch)
    target.write_text("ALPHA")  # same size
    assert _scan(files, store).digest == hash_files(files, walk_files(files), "test").digest
    assert _scan(files, store).digest != first.digest
    (tmp_path / "new").write_text("alpha")  # the old bytes again, through a new inode
    os.utime(tmp_path / "new", ns=(before.st_atime_ns, before.st_mtime_ns))
    (tmp_path / "new").replace(target)
    assert _scan(files, store).digest == first.digest


def test_files_changed_just_before_the_scan_are_hashed_but_not_kept(
        files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(treestamps, "MIN_BYTES", 0)  # the racy window as it is
    store = tmp_path / "store"
    (files / "new.txt").write_text("written a moment ago")
    first = _scan(files, store)
    assert first.digest == hash_files(files, walk_files(files), "test").digest
    assert set(json.loads(_entry(store).read_text())) == {"a.txt", "sub/b.bin"}


def test_only_files_worth_a_stamp_are_kept(files: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(treestamps, "RACY_S", 0.0)
    store = tmp_path / "store"
    _scan(files, store)
    assert not list(store.rglob("*.json"))  # small files only: nothing written at all
    (files / "big.bin").write_bytes(b"\x01" * treestamps.MIN_BYTES)
    _scan(files, store)
    assert set(json.loads(_entry(store).read_text())) == {"big.bin"}


def test_a_damaged_store_entry_is_a_miss_and_is_replaced(files: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _every_file(monkeypatch)
    store = tmp_path / "store"
    first = _scan(files, store)
    entry = _entry(store)
    entry.write_text("{not json")
    assert _scan(files, store).digest == first.digest
    assert set(json.loads(entry.read_text())) == {"a.txt", "sub/b.bin"}
    entry.write_text(json.dumps({"a.txt": [1, 2, 3], "sub/b.bin": "x"}))  # wrong shapes
    assert _scan(files, store).digest == first.digest


def test_a_package_changed_after_a_validate_that_kept_its_stamps_is_ek209(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVKIT_CACHE_DIR", str(tmp_path / "cache"))
    _every_file(monkeypatch)
    pkg = Path(shutil.copytree(NATIVE, tmp_path / "pkg"))
    write_provenance(pkg, package_record(pkg, gym_version="0.7.0"))

    def codes() -> list[tuple[str, str]]:
        return [(d.code, d.path) for d in validate(ValidateRequest(package=pkg)).diagnostics]

    assert codes() == []
    assert list((tmp_path / "cache" / "tree-stamps").rglob("*.json"))  # kept for the next run
    app = pkg / "resources_servers" / "echo_match" / "app.py"
    raw = bytearray(app.read_bytes())
    raw[0] ^= 1  # same size, other content
    app.write_bytes(bytes(raw))
    assert codes() == [("EK209", "resources_servers/echo_match/app.py")]
