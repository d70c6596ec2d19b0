"""read_wheel: METADATA and the RECORD checks (EK407) on wheels built in tmp_path."""

from __future__ import annotations

import zipfile
from typing import TYPE_CHECKING

from wheelfactory import make_wheel

from envkit.model import wheelfile
from envkit.model.wheelfile import read_wheel

if TYPE_CHECKING:
    from pathlib import Path


def _rewrite(wheel: Path, changes: dict[str, bytes | None]) -> Path:
    """Copy ``wheel`` with members replaced (bytes), dropped (None) or added, RECORD untouched."""
    with zipfile.ZipFile(wheel) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    for name, data in changes.items():
        if data is None:
            members.pop(name)
        else:
            members[name] = data
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return wheel


def test_clean_wheel(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "demo-pkg", "1.2", requires=("six>=1",), requires_python=">=3.9",
                      extras=("x",))
    wheel = read_wheel(path)
    assert wheel.error is None
    assert wheel.record_issues == ()
    assert (wheel.name, str(wheel.version)) == ("demo-pkg", "1.2")
    assert wheel.requires_dist == ("six>=1",)
    assert wheel.requires_python == ">=3.9"
    assert wheel.path == "wheels/demo_pkg-1.2-py3-none-any.whl"


def test_tampered_member_same_size_is_caught(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "demo", files={"demo/core.py": b"VALUE = 1\n"})
    _rewrite(path, {"demo/core.py": b"VALUE = 2\n"})
    issues = read_wheel(path).record_issues
    assert any("demo/core.py" in i and "does not match RECORD" in i for i in issues)


def test_size_mismatch(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "demo", files={"demo/core.py": b"VALUE = 1\n"})
    _rewrite(path, {"demo/core.py": b"VALUE = 12345\n"})
    assert any("RECORD says 10 bytes" in i for i in read_wheel(path).record_issues)


def test_record_hash_override(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "demo", record_overrides={"demo/__init__.py": "sha256=AAAA"})
    assert any("sha256 does not match" in i for i in read_wheel(path).record_issues)


def test_traversal_in_archive_and_record(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "demo", files={"../evil.py": b"x", "/abs.py": b"y"})
    issues = read_wheel(path).record_issues
    assert any("unsafe path '../evil.py' in the archive" in i for i in issues)
    assert any("unsafe path '../evil.py' in RECORD" in i for i in issues)
    assert any("'/abs.py'" in i for i in issues)


def test_drive_letter_is_unsafe() -> None:
    assert wheelfile.unsafe_member("C:/Windows/x.dll")
    assert wheelfile.unsafe_member("a\\..\\..\\x")
    assert not wheelfile.unsafe_member("pkg/sub/mod.py")
    names = ["ok/a.py", "pkg/a..b.py", "a\\..\\x", "D:evil", "/root"]
    assert wheelfile._unsafe(names) == ["a\\..\\x", "D:evil", "/root"]
    assert wheelfile._unsafe(["ok/a.py", "pkg/a..b.py"]) == []


def test_record_missing(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "demo")
    _rewrite(path, {"demo-1.0.dist-info/RECORD": None})
    assert read_wheel(path).record_issues == ("demo-1.0.dist-info/RECORD is missing",)


def test_member_not_in_record(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "demo")
    _rewrite(path, {"demo/sneaky.py": b"import os\n"})
    expected = ("'demo/sneaky.py' is in the archive but not in RECORD",)
    assert read_wheel(path).record_issues == expected


def test_big_wheel_hashes_only_in_deep_mode(tmp_path: Path) -> None:
    """Past SMALL_WHEEL_BYTES only sizes (and METADATA) are checked unless deep=True."""
    blob = b"a" * (wheelfile.SMALL_WHEEL_BYTES + 1)
    path = make_wheel(tmp_path, "big", files={"big/blob.bin": blob})
    _rewrite(path, {"big/blob.bin": b"b" * len(blob)})
    assert read_wheel(path).record_issues == ()
    assert any("big/blob.bin" in i for i in read_wheel(path, deep=True).record_issues)


def test_metadata_is_always_hashed(tmp_path: Path) -> None:
    blob = b"a" * (wheelfile.SMALL_WHEEL_BYTES + 1)
    path = make_wheel(tmp_path, "big", files={"big/blob.bin": blob})
    with zipfile.ZipFile(path) as zf:
        meta = zf.read("big-1.0.dist-info/METADATA")
    _rewrite(path, {"big-1.0.dist-info/METADATA": meta.replace(b"1.0", b"2.0")})
    assert any("METADATA" in i for i in read_wheel(path).record_issues)


def test_unreadable_and_misnamed(tmp_path: Path) -> None:
    bad = tmp_path / "bad-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    assert "unreadable archive" in (read_wheel(bad).error or "")
    odd = tmp_path / "not_a_wheel_name.whl"
    odd.write_bytes(b"")
    assert "invalid wheel filename" in (read_wheel(odd).error or "")
    path = make_wheel(tmp_path, "demo")
    _rewrite(path, {"demo-1.0.dist-info/METADATA": None})
    assert "no *.dist-info/METADATA" in (read_wheel(path).error or "")
    other = make_wheel(tmp_path / "o", "named", metadata_name="other")
    assert "METADATA names 'other'" in (read_wheel(other).error or "")


def test_comma_in_record_path(tmp_path: Path) -> None:
    """The last two RECORD fields never hold commas, so a path with one still parses."""
    path = make_wheel(tmp_path, "demo", files={"demo/a,b.py": b"x = 1\n"})
    assert read_wheel(path).record_issues == ()
    _rewrite(path, {"demo/a,b.py": b"x = 2\n"})
    assert any("a,b.py" in i for i in read_wheel(path).record_issues)


def test_metadata_headers_only(tmp_path: Path) -> None:
    """Only the fields validation needs are parsed; folded lines and the body are handled."""
    path = make_wheel(tmp_path, "demo", requires=("six>=1",))
    meta = "demo-1.0.dist-info/METADATA"
    with zipfile.ZipFile(path) as zf:
        text = zf.read(meta).decode()
    extra = "Classifier: X :: Y\nRequires-Python: >=3.9,\n <4\n"
    text = text.replace("Version: 1.0\n", "Version: 1.0\n" + extra)
    text += "\nLong description\nRequires-Dist: not-a-header\n"
    _rewrite(path, {meta: text.encode()})
    wheel = read_wheel(path)
    assert wheel.requires_dist == ("six>=1",)
    assert wheel.requires_python is not None and "<4" in wheel.requires_python


def test_archives_the_fast_reader_declines_still_read(tmp_path: Path) -> None:
    """A prefixed archive or a bzip2 member falls back to zipfile with the same result."""
    path = make_wheel(tmp_path, "demo", files={"demo/core.py": b"VALUE = 1\n"})
    data = path.read_bytes()
    prefixed = tmp_path / "p" / path.name
    prefixed.parent.mkdir()
    prefixed.write_bytes(b"#!/bin/sh\n" + data)
    assert read_wheel(prefixed).error is None
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_BZIP2) as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    wheel = read_wheel(path)
    assert (wheel.error, wheel.record_issues) == (None, ())


def test_corrupt_member_is_reported_not_raised(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "demo", files={"demo/core.py": b"VALUE = 1\n" * 50})
    data = bytearray(path.read_bytes())
    at = data.find(b"demo/core.py") + len("demo/core.py") + 5  # inside the deflate stream
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    wheel = read_wheel(path)
    assert wheel.error is not None or wheel.record_issues


def test_every_issue_is_reported_not_just_the_first(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, "demo", files={"demo/core.py": b"VALUE = 1\n"})
    _rewrite(path, {"demo/sneaky.py": b"x\n", "demo/core.py": b"VALUE = 2\n"})
    issues = read_wheel(path).record_issues
    assert any("sneaky.py" in i for i in issues)
    assert any("core.py" in i and "does not match" in i for i in issues)


def test_core_fields() -> None:
    data = (
        b"Metadata-Version: 2.4\r\nName: Demo.Pkg\r\nVersion: 1.0\r\n"
        b"Requires-Dist: a>=1\r\nrequires-dist: b; extra == 'x'\r\n"
        b"Requires-Python: >=3.9,\r\n <4\r\nSummary: caf\xe9 \xff\r\nProvides-Extra: x\r\n"
        b"\r\nRequires-Dist: body-not-header\r\n"
    )
    fields = wheelfile.core_fields(data)
    assert fields == {
        "name": ["Demo.Pkg"],
        "version": ["1.0"],
        "requires-dist": ["a>=1", "b; extra == 'x'"],
        "requires-python": [">=3.9, <4"],
        "provides-extra": ["x"],
    }
