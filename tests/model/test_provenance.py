"""The provenance record: its digests, its reader, EK209 on a package changed after its record,
and who writes it (``envkit build``, ``envkit train``)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from support.paths import REPO_ROOT

from envkit.model.lock import Lock, LockedWheel
from envkit.model.package import load_package
from envkit.model.provenance import (
    PROVENANCE_NAME,
    Provenance,
    closure_versions,
    parse_provenance,
)
from envkit.model.tree import hash_files, walk_files
from envkit.platform.filesets import scan_tree
from envkit.schemas import load_schema
from envkit.supply.provenance import package_record, run_record, write_provenance
from envkit.validate.validate import ValidateRequest, validate

NATIVE = REPO_ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """valid-native-v1 with the record ``envkit build`` writes."""
    pkg = tmp_path / "pkg"
    shutil.copytree(NATIVE, pkg)
    write_provenance(pkg, package_record(pkg, gym_version="0.7.0"))
    return pkg


def _codes(pkg: Path) -> list[tuple[str, str]]:
    report = validate(ValidateRequest(package=pkg))
    return [(d.code, d.path) for d in report.diagnostics]


def test_a_package_matching_its_record_validates_clean(recorded: Path) -> None:
    assert _codes(recorded) == []
    data = json.loads((recorded / PROVENANCE_NAME).read_text())
    Draft202012Validator(load_schema("provenance")).validate(data)
    assert data["package"]["name"] == "echo-match" and data["closure"]["nemo-gym"] == "0.7.0"
    assert PROVENANCE_NAME not in data["package"]["files"]  # the record never covers itself


def test_one_byte_changed_after_the_record_is_ek209_naming_the_file(recorded: Path) -> None:
    app = recorded / "resources_servers/echo_match/app.py"
    raw = bytearray(app.read_bytes())
    raw[0] ^= 1  # same size, other content
    app.write_bytes(bytes(raw))
    assert _codes(recorded) == [("EK209", "resources_servers/echo_match/app.py")]


def test_added_and_removed_files_are_named(recorded: Path) -> None:
    (recorded / "resources_servers/echo_match/extra.py").write_text("x = 1\n")
    (recorded / "resources_servers/echo_match/app.py").unlink()
    report = validate(ValidateRequest(package=recorded))
    messages = sorted(d.message for d in report.diagnostics if d.code == "EK209")
    assert messages == [
        "`resources_servers/echo_match/app.py` was removed since `provenance.json` was written",
        "`resources_servers/echo_match/extra.py` was added since `provenance.json` was written"]


def test_an_edited_digest_or_an_unreadable_record_is_ek209_on_the_record(recorded: Path) -> None:
    path = recorded / PROVENANCE_NAME
    data = json.loads(path.read_text())
    data["package"]["sha256"] = "0" * 64
    path.write_text(json.dumps(data))
    assert _codes(recorded) == [("EK209", PROVENANCE_NAME)]
    path.write_text("{not json")
    assert _codes(recorded) == [("EK209", PROVENANCE_NAME)]


def test_a_package_without_a_record_is_never_hashed(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(NATIVE, pkg)
    assert load_package(pkg).provenance is None
    assert _codes(pkg) == []


def test_the_digest_takes_each_files_stat_from_the_walk_not_again(
        recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk stats every regular file for its size; the digest's quick check reuses that
    stat, and still reads every file, the same digest as one that stats each file itself."""
    import envkit.model.tree as tree_module

    stats: list[str] = []
    real = tree_module.os.stat

    def counted(path: object, *args: object, **kwargs: object) -> object:
        stats.append(str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tree_module.os, "stat", counted)
    doc = load_package(recorded).provenance
    assert doc is not None and doc.actual is not None
    assert not [p for p in stats if p.startswith(f"{recorded}/")]  # the root: exists, is_dir
    monkeypatch.undo()
    assert doc.actual.digest == hash_files(
        recorded, [p for p in walk_files(recorded) if p != PROVENANCE_NAME], "package").digest


def test_a_text_file_is_read_once_for_the_secret_scan_and_the_package_digest(
        recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The secret scan reads every text file whole; the package digest takes its hash of those
    bytes and reads only what the scan did not (here: a binary file), to the same digest."""
    import envkit.model.tree as tree_module

    (recorded / "blob.bin").write_bytes(b"\0binary")
    hashed: list[str] = []
    real = tree_module.sha256_file

    def counted(path: str) -> str:
        hashed.append(str(path).removeprefix(f"{recorded}/"))
        return real(path)

    monkeypatch.setattr(tree_module, "sha256_file", counted)
    doc = load_package(recorded).provenance
    assert doc is not None and doc.actual is not None
    assert hashed == ["blob.bin"]
    monkeypatch.undo()
    assert doc.actual.digest == hash_files(
        recorded, [p for p in walk_files(recorded) if p != PROVENANCE_NAME], "package").digest


def test_rewriting_the_record_does_not_change_the_package_digest(recorded: Path) -> None:
    first = package_record(recorded)
    write_provenance(recorded, first)
    assert package_record(recorded).package_sha256 == first.package_sha256


def test_the_record_round_trips_through_its_reader() -> None:
    record = Provenance("0.1.0", "env", "wheels-v1", "a" * 64, {"x": "b" * 64}, "c" * 64,
                        "cp313-manylinux_2_28_aarch64", "0.7.0", "0.1.4", "d" * 64, "e" * 64)
    doc = parse_provenance(record.dumps().encode())
    assert doc.record == record
    assert "files" not in record.to_dict(files=False)["package"]
    assert parse_provenance(b"[1]").error == "top level is a list, not an object"


def test_closure_versions_from_the_lock_then_the_requirements() -> None:
    lock = Lock("t", "3.13", "uv", wheels=(LockedWheel("nemo_gym", "0.7.0", "f", None, None),
                                          LockedWheel("Verifiers", "0.1.4", "g", None, None)))
    assert closure_versions(lock) == {"gym_version": "0.7.0", "verifiers_version": "0.1.4"}
    assert closure_versions(None, ["numpy\nnemo-gym[dev] == 0.6.1\nverifiers>=0.1\n"]) == {
        "gym_version": "0.6.1"}
    assert closure_versions(Lock("t", "3.13", "uv", gym_version="0.7.0")) == {
        "gym_version": "0.7.0"}


def test_the_dataset_digest_is_the_one_its_fileset_is_named_by(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "training.jsonl").write_text('{"a": 1}\n')
    job = tmp_path / "job.json"
    job.write_text("{}")
    record = run_record(NATIVE, data, job)
    assert record.dataset_sha256 == scan_tree(data, "dataset").digest
    assert record.job_sha256 == hashlib.sha256(b"{}").hexdigest()
    assert record.package_files == {}  # a run carries the digest, not the file list
    # One digest function: the platform's FileSet digest is the model's.
    assert scan_tree(NATIVE, "environment").digest == hash_files(
        NATIVE, walk_files(NATIVE), "environment").digest


def test_build_writes_the_record_and_a_later_edit_fails_validate(tmp_path: Path) -> None:
    from envkit.builder.build import BuildRequest, build
    from envkit.model.target import Target

    src = REPO_ROOT / "fixtures" / "gym_trees" / "resources_servers" / "char_pattern"
    result = build(BuildRequest(sources=(src,), out=tmp_path / "pkg", fmt="native-v1",
                                target=Target("x86_64")))
    assert result.report.valid
    record = json.loads((result.out / PROVENANCE_NAME).read_text())
    assert record["package"]["format"] == "native-v1"
    assert record["closure"]["nemo-gym"] == "0.7.0"
    config = next(p for p in sorted(result.out.rglob("*.yaml")) if "char_pattern" in str(p))
    config.write_bytes(config.read_bytes().replace(b"\n", b" \n", 1))
    assert ("EK209", config.relative_to(result.out).as_posix()) in _codes(result.out)


def test_the_probe_writes_provenance_next_to_its_report(tmp_path: Path) -> None:
    from envkit.probe.report import ProbeReport
    from envkit.probe.write import write_outputs

    write_outputs(ProbeReport(str(NATIVE), "validate"), tmp_path / "out")
    record = json.loads((tmp_path / "out" / PROVENANCE_NAME).read_text())
    assert record["package"]["sha256"] == package_record(NATIVE).package_sha256
    assert record["dataset"] is None and record["job"] is None
