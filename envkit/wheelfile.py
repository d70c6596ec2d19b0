"""Read what validation needs from a wheel straight out of the zip, without installing it.

``zipfile`` + ``packaging.metadata`` costs about a millisecond a wheel; this is the hot path
of ``envkit validate`` on a wheelhouse, so nothing here hashes the whole archive by default.

RECORD checks (EK407), cheapest first:

- always: path traversal in the zip namelist and in RECORD (absolute, ``..``, drive letters,
  backslashes), RECORD missing, archive members RECORD does not list, and RECORD sizes against
  the zip directory's uncompressed sizes (free: no member is decompressed);
- always: the sha256 of every ``.dist-info/`` member and of every member of a wheel whose
  uncompressed payload is at most ``SMALL_WHEEL_BYTES`` (pure-Python env wheels, fixtures);
- ``deep=True`` (``--verify-hashes``): every member of every wheel. Decompressing and hashing
  ray's ~70 MB wheel alone takes most of a second, which would blow the closure check's budget.

A same-size edit inside a big wheel is therefore caught only by the deep mode, and pip/uv
verify RECORD again at install time anyway.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.metadata import parse_email
from packaging.tags import Tag
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

__all__ = ["SMALL_WHEEL_BYTES", "WheelFile", "read_wheel", "record_issues", "unsafe_member"]

SMALL_WHEEL_BYTES = 2 * 1024 * 1024
"""Wheels whose members total at most this are hash-verified in full by default."""
_MAX_ISSUES = 20


@dataclass(frozen=True)
class WheelFile:
    """One wheel of ``wheels/``: its filename tags and core metadata, or why it is unreadable."""

    path: str
    """Path relative to the package root, e.g. ``wheels/openai-2.44.0-py3-none-any.whl``."""
    filename: str
    name: NormalizedName | None = None
    version: Version | None = None
    tags: frozenset[Tag] = frozenset()
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None
    provides_extra: tuple[str, ...] = ()
    error: str | None = None
    """Set when the filename is invalid or the archive/METADATA cannot be read (EK400)."""
    record_issues: tuple[str, ...] = field(default=())
    """RECORD problems found by the cheap checks (EK407)."""


def read_wheel(file: Path, rel: str | None = None, *, deep: bool = False) -> WheelFile:
    """Read ``file``; never raises over the wheel's content. ``deep`` hashes every member."""
    rel = rel or f"wheels/{file.name}"
    try:
        name, version, _build, tags = parse_wheel_filename(file.name)
    except InvalidWheelFilename as exc:
        return WheelFile(rel, file.name, error=f"invalid wheel filename: {exc}")
    base = WheelFile(rel, file.name, name=name, version=version, tags=frozenset(tags))
    try:
        with zipfile.ZipFile(file) as zf:
            return _read_archive(base, zf, deep=deep)
    except (zipfile.BadZipFile, OSError, EOFError, zipfile.LargeZipFile) as exc:
        return _replace(base, error=f"unreadable archive: {exc}")


def _read_archive(base: WheelFile, zf: zipfile.ZipFile, *, deep: bool) -> WheelFile:
    metas = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if not metas:
        return _replace(base, error="no *.dist-info/METADATA in the archive")
    try:
        raw, _unparsed = parse_email(zf.read(metas[0]))
    except (ValueError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        return _replace(base, error=f"unreadable METADATA: {exc}")
    meta_name = raw.get("name")
    if meta_name and base.name and canonicalize_name(meta_name) != base.name:
        msg = f"METADATA names {meta_name!r} but the filename says {base.name!r}"
        return _replace(base, error=msg)
    return _replace(
        base,
        requires_dist=tuple(raw.get("requires_dist", ())),
        requires_python=raw.get("requires_python"),
        provides_extra=tuple(raw.get("provides_extra", ())),
        record_issues=record_issues(zf, metas[0].split("/", 1)[0], deep=deep),
    )


def unsafe_member(name: str) -> bool:
    """True for a member path an installer could write outside site-packages.

    >>> [unsafe_member(p) for p in ("a/b.py", "/etc/x", "a/../../x", "C:/x")]
    [False, True, True, True]
    """
    norm = name.replace("\\", "/")
    if norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        return True
    return ".." in norm.split("/")


def record_issues(zf: zipfile.ZipFile, dist_info: str, *, deep: bool = False) -> tuple[str, ...]:
    """RECORD problems of an open wheel, at most ``_MAX_ISSUES`` of them (never raises)."""
    infos = {i.filename: i for i in zf.infolist() if not i.is_dir()}
    issues = [f"unsafe path {n!r} in the archive" for n in infos if unsafe_member(n)]
    record_name = f"{dist_info}/RECORD"
    if record_name not in infos:
        return (*issues, f"{record_name} is missing")[:_MAX_ISSUES]
    try:
        rows = _record_rows(zf.read(record_name))
    except (ValueError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        return (*issues, f"{record_name} unreadable: {exc}")[:_MAX_ISSUES]
    issues += [f"unsafe path {p!r} in RECORD" for p in rows if unsafe_member(p)]
    unlisted = sorted(n for n in infos if n not in rows and not _is_signature(n, dist_info))
    issues += [f"{n!r} is in the archive but not in RECORD" for n in unlisted]
    full = deep or sum(i.file_size for i in infos.values()) <= SMALL_WHEEL_BYTES
    for path, (digest, size) in rows.items():
        info = infos.get(path)
        if info is None or path == record_name or len(issues) >= _MAX_ISSUES:
            continue
        issues += _member_issues(zf, info, digest, size, hash_it=full or path.startswith(dist_info))
    return tuple(issues[:_MAX_ISSUES])


def _record_rows(data: bytes) -> dict[str, tuple[str, str]]:
    """``path -> (hash, size)`` from RECORD's CSV (PEP 376 / the wheel spec)."""
    rows = csv.reader(io.StringIO(data.decode("utf-8")))
    return {row[0]: (row[1], row[2]) for row in rows if len(row) >= 3 and row[0]}


def _is_signature(name: str, dist_info: str) -> bool:
    return name in (f"{dist_info}/RECORD.jws", f"{dist_info}/RECORD.p7s")


def _member_issues(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, digest: str, size: str, *, hash_it: bool
) -> list[str]:
    if size and size.isdigit() and int(size) != info.file_size:
        return [f"{info.filename!r}: RECORD says {size} bytes, the archive holds {info.file_size}"]
    if not digest:
        return [f"{info.filename!r} has no hash in RECORD"]
    if not hash_it:
        return []
    algo, _, expected = digest.partition("=")
    if algo not in hashlib.algorithms_guaranteed or algo in ("md5", "sha1"):
        return [f"{info.filename!r}: unsupported RECORD hash {algo!r}"]
    try:
        actual = _b64_digest(algo, zf.read(info))
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        return [f"{info.filename!r} cannot be read: {exc}"]
    if actual != expected:
        return [f"{info.filename!r}: {algo} does not match RECORD (content was changed)"]
    return []


def _b64_digest(algo: str, data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.new(algo, data).digest()).rstrip(b"=").decode()


def _replace(wheel: WheelFile, **changes: object) -> WheelFile:
    return WheelFile(**{**wheel.__dict__, **changes})
