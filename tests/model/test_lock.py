"""envkit/model/lock.py: the one ``wheels.lock`` model, its lenient reader and its writer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.model.lock import (
    MAX_LOCK_BYTES,
    Lock,
    LockedRequirement,
    LockedWheel,
    parse_lock,
    read_lock,
)
from envkit.model.package import load_package
from envkit.model.target import Target
from envkit.validate.gate import choose_target
from envkit.validate.settings import Settings

VALID = REPO_ROOT / "fixtures" / "packages" / "valid-wheels-v1" / "pkg"

BUILT = Lock(
    target="cp313-manylinux_2_28_aarch64", python_version="3.13", resolver="uv 0.13.0",
    gym_version="0.7.0",
    requirements=(LockedRequirement("requests>=2", ("resources_servers/x/requirements.txt",)),),
    wheels=(
        LockedWheel("requests", "2.32.3", "requests-2.32.3-py3-none-any.whl",
                    url="https://files.example/requests.whl", sha256="ab" * 32,
                    requested_by=("requests>=2",), why=("requests>=2", "requests")),
        LockedWheel("pure", "1.0", "pure-1.0-py3-none-any.whl", url=None, sha256="cd" * 32,
                    why=("pure",), built_from=("https://files.example/pure-1.0.tar.gz", "ef")),
    ),
)


def test_what_the_writer_writes_the_reader_reads_back() -> None:
    doc = parse_lock(BUILT.dumps().encode())
    assert doc.ok and doc.problems == ()
    assert doc.lock == BUILT


def test_the_writer_keeps_the_shape_build_and_convert_wrote() -> None:
    """Key order and fields as the two hand-written dicts had them (byte-identical rebuilds)."""
    data = json.loads(BUILT.dumps())
    assert list(data) == ["version", "target", "python_version", "gym_version", "resolver",
                          "requirements", "wheels"]
    assert list(data["wheels"][1]) == ["name", "version", "filename", "sha256", "url",
                                       "requested_by", "why", "built_from"]
    assert data["wheels"][1]["built_from"] == {
        "sdist_url": "https://files.example/pure-1.0.tar.gz", "sdist_sha256": "ef"}
    converted = Lock(target="t", python_version="3.13", resolver="uv", wheels=(
        LockedWheel("env", "1", "env-1-py3-none-any.whl", None, None, source="--wheel"),))
    data = json.loads(converted.dumps())
    assert "gym_version" not in data
    assert list(data["wheels"][0]) == ["name", "version", "filename", "sha256", "url",
                                       "requested_by", "source"]
    assert converted.dumps().endswith("}\n") and converted.dumps() == converted.dumps()


@pytest.mark.parametrize(("raw", "error"), [
    (b"{not json", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[1, 2]", "top level is a list"),
    (b"[" * 100_000, "not JSON"),
    (b" " * (MAX_LOCK_BYTES + 1), "not parsed"),
])
def test_an_unreadable_lock_is_recorded_not_raised(raw: bytes, error: str) -> None:
    doc = parse_lock(raw)
    assert doc.lock is None and doc.error is not None and error in doc.error


def test_entries_that_cannot_be_read_are_named_and_the_rest_kept() -> None:
    raw = json.dumps({"target": 7, "requirements": ["x", {"requirement": "y", "from": [1, "a"]}],
                      "wheels": [{"name": "a"}, "b",
                                 {"name": "c", "version": "1", "filename": "c-1.whl",
                                  "why": "not a list", "built_from": [1]}]})
    doc = parse_lock(raw.encode())
    assert doc.ok and doc.lock is not None
    assert doc.lock.target == "" and doc.lock.target_spec is None
    assert doc.lock.requirements == (LockedRequirement("y", ("a",)),)
    assert [w.name for w in doc.lock.wheels] == ["c"]
    assert doc.lock.wheels[0].why is None and doc.lock.wheels[0].built_from is None
    assert doc.problems == ("`requirements[0]` has no `requirement` string",
                            "`wheels[0]` lacks a `name`, `version` or `filename` string",
                            "`wheels[1]` lacks a `name`, `version` or `filename` string")


@pytest.mark.parametrize(("text", "target"), [
    ("cp313-manylinux_2_28_aarch64", Target(arch="aarch64", python=(3, 13), glibc=(2, 28))),
    ("cp312-manylinux_2_17_x86_64", Target(arch="x86_64", python=(3, 12), glibc=(2, 17))),
    ("cp313-manylinux_2_28_sparc", None),
    ("py3-none-any", None),
])
def test_target_spec(text: str, target: Target | None) -> None:
    lock = Lock(target=text, python_version="3.13", resolver="uv")
    assert (None if lock.target_spec is None else str(lock.target_spec)) == (
        None if target is None else str(target))


def _package(tmp_path: Path, lock: str | None) -> Path:
    pkg = tmp_path / "pkg"
    shutil.copytree(VALID, pkg)
    (pkg / "wheels.lock").unlink(missing_ok=True)
    if lock is not None:
        (pkg / "wheels.lock").write_text(lock)
    return pkg


def test_the_package_model_carries_its_lock(tmp_path: Path) -> None:
    assert load_package(_package(tmp_path / "a", None)).lock is None
    pkg = load_package(_package(tmp_path / "b", BUILT.dumps()))
    assert pkg.lock is not None and pkg.lock.lock == BUILT
    assert read_lock(tmp_path / "b" / "pkg" / "wheels.lock") == pkg.lock


def test_a_lock_that_is_a_directory_is_recorded(tmp_path: Path) -> None:
    root = _package(tmp_path, None)
    (root / "wheels.lock").mkdir()
    lock = load_package(root).lock
    assert lock is not None and lock.error is not None and "a directory" in lock.error


def test_the_gate_takes_the_target_from_the_package_model(tmp_path: Path) -> None:
    pkg = load_package(_package(tmp_path, BUILT.dumps()))
    (tmp_path / "pkg" / "wheels.lock").unlink()  # read once: the model, not the file
    choice = choose_target(pkg, Settings(), Settings())
    assert (str(choice.target), choice.source, choice.note) == (
        "cp313-manylinux_2_28_aarch64", "wheels.lock", None)


@pytest.mark.parametrize(("lock", "said"), [
    ("{oops", "wheels.lock cannot be used (not JSON"),
    ('{"target": "cp313-musllinux_1_2_x86_64"}', "names no target envkit knows"),
])
def test_a_lock_that_names_no_target_is_said(tmp_path: Path, lock: str, said: str) -> None:
    """It used to fall back to the default target silently."""
    choice = choose_target(load_package(_package(tmp_path, lock)), Settings(), Settings())
    assert choice.source == "default" and choice.note is not None and said in choice.note
    assert "checking against cp313-manylinux_2_28_x86_64 (default)" in choice.note
