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

from envkit.model import tree as tree_module
from envkit.model.tree import hash_files, walk_files
from envkit.supply import treestamps
from envkit.supply.provenance import package_record, write_provenance
from envkit.supply.treestamps import rescan
from envkit.validate.validate import ValidateRequest, validate

NATIVE = REPO_ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"


def _scan(root: Path, store: Path):  # type: ignore[no-untyped-def]
    return rescan(root, "test", lambda stamps: hash_files(root, walk_files(root), "test", stamps),
                  store)


def _entry(store: Path) -> Path:
    [entry] = store.rglob("*.json")
    return entry


def _payload(store: Path) -> object:
    """The stamps an entry holds (after its seal line)."""
    return json.loads(_entry(store).read_bytes().split(b"\n", 1)[1])


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


def test_a_rewrite_or_a_replaced_file_is_read_again(
        files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A same-size rewrite moves the mtime; a file replaced by a rename is another inode, even
    with the old size and mtime."""
    _every_file(monkeypatch)
    store = tmp_path / "store"
    first = _scan(files, store)
    target = files / "a.txt"
    before = target.stat()
    target.write_text("ALPHA")  # same size
    assert _scan(files, store).digest == hash_files(files, walk_files(files), "test").digest
    assert _scan(files, store).digest != first.digest
    (tmp_path / "new").write_text("alpha")  # the old bytes again, through a new inode
    os.utime(tmp_path / "new", ns=(before.st_atime_ns, before.st_mtime_ns))
    (tmp_path / "new").replace(target)
    assert _scan(files, store).digest == first.digest


def test_files_changed_just_before_the_scan_are_hashed_but_not_kept(
        files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(treestamps, "MIN_BYTES", 0)
    monkeypatch.setattr(treestamps, "RACY_S", 1.0)
    time.sleep(1.1)  # the fixture's files' ctimes (set when their mtime was) leave the window
    store = tmp_path / "store"
    (files / "new.txt").write_text("written a moment ago")
    first = _scan(files, store)
    assert first.digest == hash_files(files, walk_files(files), "test").digest
    assert set(_payload(store)) == {"a.txt", "sub/b.bin"}  # type: ignore[arg-type]


def test_only_files_worth_a_stamp_are_kept(files: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(treestamps, "RACY_S", 0.0)
    store = tmp_path / "store"
    _scan(files, store)
    assert not list(store.rglob("*.json"))  # small files only: nothing written at all
    (files / "big.bin").write_bytes(b"\x01" * treestamps.MIN_BYTES)
    _scan(files, store)
    assert set(_payload(store)) == {"big.bin"}  # type: ignore[arg-type]


def test_a_damaged_store_entry_is_a_miss_and_is_replaced(files: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _every_file(monkeypatch)
    store = tmp_path / "store"
    first = _scan(files, store)
    entry = _entry(store)
    entry.write_text("{not json")
    assert _scan(files, store).digest == first.digest
    assert set(_payload(store)) == {"a.txt", "sub/b.bin"}  # type: ignore[arg-type]
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


def _big_built_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A built package (provenance record) whose app.py is 64 KiB or more, stamped by a run."""
    monkeypatch.setenv("ENVKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(treestamps, "RACY_S", 0.0)
    pkg = Path(shutil.copytree(NATIVE, tmp_path / "pkg"))
    app = pkg / "resources_servers" / "echo_match" / "app.py"
    app.write_text(app.read_text() + "#" * treestamps.MIN_BYTES + "\n")
    write_provenance(pkg, package_record(pkg, gym_version="0.7.0"))
    return pkg, app


def test_a_same_size_edit_with_its_mtime_put_back_is_ek209(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stamp holds the ctime, which no one can put back: the edit is read, and reported."""
    pkg, app = _big_built_package(tmp_path, monkeypatch)

    def codes() -> list[str]:
        return [d.code for d in validate(ValidateRequest(package=pkg)).diagnostics]

    assert codes() == []
    assert list((tmp_path / "cache" / "tree-stamps").rglob("*.json"))
    before = app.stat()
    text = app.read_text()
    edited = text.replace("#" * 16, "os.system('id')#", 1)
    assert len(edited) == len(text)
    time.sleep(0.01)
    app.write_text(edited)
    os.utime(app, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert app.stat().st_size == before.st_size and app.stat().st_mtime_ns == before.st_mtime_ns
    assert codes() == ["EK209"]


def test_a_forged_stamp_is_not_believed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone who can write the cache directory (the same user in a workspace-local cache)
    edits the file and writes the old hash under its new stat: the entry's seal no longer
    matches, so the file is read and EK209 reported."""
    pkg, app = _big_built_package(tmp_path, monkeypatch)
    assert validate(ValidateRequest(package=pkg)).diagnostics == ()
    store = tmp_path / "cache" / "tree-stamps"
    entry = _entry(store)
    seal, payload = entry.read_bytes().split(b"\n", 1)
    stamps = json.loads(payload)
    rel = "resources_servers/echo_match/app.py"
    text = app.read_text()
    app.write_text(text.replace("#" * 16, "os.system('id')#", 1))
    st = app.stat()
    stamps[rel][:5] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
    entry.write_bytes(seal + b"\n" + json.dumps(stamps).encode())
    assert [d.code for d in validate(ValidateRequest(package=pkg)).diagnostics] == ["EK209"]


@pytest.mark.parametrize("how", ["another user", "group-writable", "other-writable"])
def test_a_stamp_not_yours_alone_is_ignored_with_one_warning(
        how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from envkit.supply import root

    monkeypatch.setattr(root, "_warned", [])
    monkeypatch.setattr(root, "_trusted_dirs", {})
    _every_file(monkeypatch)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "big.bin").write_bytes(b"\x01" * 100)
    store = tmp_path / "store"
    first = _scan(tree, store)
    entry = _entry(store)
    if how == "another user":
        os.chown(entry, 65534, 65534)
    else:
        entry.chmod(0o620 if how == "group-writable" else 0o602)
    read: list[str] = []
    real = tree_module.sha256_file
    monkeypatch.setattr(tree_module, "sha256_file", lambda p: read.append(str(p)) or real(p))
    capsys.readouterr()
    assert _scan(tree, store).digest == first.digest
    assert len(read) == 1  # read again: the entry is not believed
    mine = _entry(store).stat()  # and replaced by one of this user's own
    assert mine.st_uid == os.geteuid() and mine.st_mode & 0o777 == 0o600
    assert _scan(tree, store).digest == first.digest
    warnings = capsys.readouterr().err.splitlines()
    assert len(warnings) == 1 and "ignoring cache entries" in warnings[0]


def test_a_store_in_a_directory_others_may_write_is_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envkit.supply import root

    monkeypatch.setattr(root, "_warned", [])
    monkeypatch.setattr(root, "_trusted_dirs", {})
    _every_file(monkeypatch)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "big.bin").write_bytes(b"\x01" * 100)
    store = tmp_path / "shared" / "store"
    _scan(tree, store)
    assert (store.stat().st_mode & 0o777) == 0o700  # made private
    assert (_entry(store).stat().st_mode & 0o777) == 0o600
    os.chown(store, 65534, 65534)  # a folder of another user's
    monkeypatch.setattr(root, "_trusted_dirs", {})
    _no_reads(monkeypatch)
    with pytest.raises(AssertionError, match="read again"):
        _scan(tree, store)
