"""Read what validation needs from a wheel straight out of the zip, without installing it: the
zip directory, five METADATA header fields and RECORD (members read in bounded pieces,
``envkit.model._zipdir``). The hot path of ``envkit validate`` on a wheelhouse.

RECORD checks (EK407), cheapest first:

- always: unsafe paths in the zip and in RECORD, RECORD missing, members RECORD does not list,
  and RECORD sizes against the zip directory's (no member is decompressed);
- always: the sha256 of METADATA and of every member of a wheel whose payload is at most
  ``SMALL_WHEEL_BYTES``: hashing all of a large closure would cost many times the rest;
- ``deep=True`` (``--verify-hashes``): every member of every wheel.

A same-size edit inside a big wheel is caught only by the deep mode; pip and uv verify RECORD
again at install time anyway.
"""

from __future__ import annotations

import base64
import csv
import io
import struct
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from envkit.model._zipdir import Archive
from envkit.model.secrets import secret_file_kind

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from packaging.tags import Tag
    from packaging.utils import NormalizedName
    from packaging.version import Version

# ``packaging`` and ``hashlib`` are imported where a wheel is read: most runs read none, and
# ``packaging`` compiles its grammar's regexes at import.

__all__ = [
    "ARCHIVE_FACTS",
    "SMALL_WHEEL_BYTES",
    "WheelFile",
    "WheelReader",
    "core_fields",
    "from_filename",
    "read_wheel",
    "record_issues",
    "unsafe_member",
    "with_archive",
]

SMALL_WHEEL_BYTES = 64 * 1024
"""Wheels whose members total at most this are hash-verified in full by default."""
_MAX_ISSUES = 20
MAX_META_BYTES = 32 * 1024 * 1024
"""METADATA and RECORD declared larger than this are not read (ray's RECORD is ~1 MiB)."""
_MAX_SIZE_DIGITS = 20


@dataclass(frozen=True, slots=True)
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
    startup_code: tuple[str, ...] = field(default=())
    """Members that are ``.pth`` files installed into site-packages with a line ``site`` runs
    as code (one starting with ``import``): run at every interpreter start (EK409)."""
    secret_files: tuple[str, ...] = field(default=())
    """Members named as dotenv or private-key files (``envkit.model.secrets``): installed
    with the wheel, so uploaded with the package (EK210)."""


ARCHIVE_FACTS = ("requires_dist", "requires_python", "provides_extra", "error", "record_issues",
                 "startup_code", "secret_files")
"""The fields only the archive's bytes give (the rest come from the filename): what a reader
that keeps facts between runs stores (``envkit.supply.wheelfacts``)."""


class WheelReader(Protocol):
    """How a wheel is read: :func:`read_wheel`, or a reader that keeps facts between runs."""

    def __call__(self, file: Path, rel: str | None = None, *, deep: bool = False) -> WheelFile:
        ...


def from_filename(file: Path, rel: str | None = None) -> WheelFile:
    """What ``file``'s name alone says (name, version, tags), or its filename error."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    rel = rel or f"wheels/{file.name}"
    try:
        name, version, _build, tags = parse_wheel_filename(file.name)
    except InvalidWheelFilename as exc:
        return WheelFile(rel, file.name, error=f"invalid wheel filename: {exc}")
    return WheelFile(rel, file.name, name=name, version=version, tags=frozenset(tags))


def read_wheel(file: Path, rel: str | None = None, *, deep: bool = False) -> WheelFile:
    """Read ``file``; never raises over the wheel's content. ``deep`` hashes every member."""
    base = from_filename(file, rel)
    return base if base.error else with_archive(base, file, deep=deep)


def with_archive(base: WheelFile, file: Path, *, deep: bool = False) -> WheelFile:
    """``base`` (:func:`from_filename` of ``file``) with what ``file``'s archive holds."""
    try:
        with zipfile.ZipFile(file) as zf:
            return _read_archive(base, Archive(zf), deep=deep)
    except (zipfile.BadZipFile, OSError, EOFError, zipfile.LargeZipFile) as exc:
        return replace(base, error=f"unreadable archive: {exc}")
    except _ZIPFILE_ERRORS as exc:  # zipfile's parser on a hostile central directory
        return replace(base, error=f"unreadable archive: {type(exc).__name__}: {exc}")


_ZIPFILE_ERRORS = (ValueError, NotImplementedError, RuntimeError, IndexError, KeyError,
                   struct.error)
"""What ``zipfile`` raises besides ``BadZipFile`` on crafted archives (an empty member name:
``IndexError``; method 99: ``NotImplementedError``; encryption: ``RuntimeError``)."""


def _read_archive(base: WheelFile, zf: Archive, *, deep: bool) -> WheelFile:
    metas = [n for n in zf.sizes if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if not metas:
        return replace(base, error="no *.dist-info/METADATA in the archive")
    if zf.sizes[metas[0]] > MAX_META_BYTES:
        return replace(base, error=f"METADATA is over {MAX_META_BYTES // 2**20} MiB; not read")
    try:
        meta_bytes = zf.read(metas[0])
    except zipfile.BadZipFile as exc:
        return replace(base, error=f"unreadable METADATA: {exc}")
    from packaging.utils import canonicalize_name

    raw = core_fields(meta_bytes)
    meta_name = _first(raw, "name")
    if meta_name and base.name and canonicalize_name(meta_name) != base.name:
        msg = f"METADATA names {meta_name!r} but the filename says {base.name!r}"
        return replace(base, error=msg)
    return replace(
        base,
        requires_dist=tuple(raw.get("requires-dist", ())),
        requires_python=_first(raw, "requires-python"),
        provides_extra=tuple(raw.get("provides-extra", ())),
        record_issues=record_issues(
            zf, metas[0].split("/", 1)[0], deep=deep, known={metas[0]: meta_bytes}
        ),
        startup_code=_startup_code(zf, base.name),
        secret_files=tuple(sorted(n for n in zf.sizes if secret_file_kind(n) is not None)),
    )


_PTH_MAX_BYTES = 1024 * 1024
"""A ``.pth`` larger than this is not read (reported as code: nothing legitimate is that big)."""


AUDITED_STARTUP_HOOKS: frozenset[tuple[str, str, str]] = frozenset({
    # setuptools' switch between its own distutils and the standard library's (two defaults)
    ("setuptools", "distutils-precedence.pth",
     "2638ce9e2500e572a5e0de7faed6661eb569d1b696fcba07b0dd223da5f5d224"),
    ("setuptools", "distutils-precedence.pth",
     "7ea7ffef3fe2a117ee12c68ed6553617f0d7fd2f0590257c25c484959a3b7373"),
    # coverage's subprocess measurement, which does nothing unless COVERAGE_PROCESS_START is set
    ("coverage", "a1_coverage.pth",
     "ef2ed06d19867ec669c09a804060666a9cd5e383af0a9d11aa2de79b77d448e8"),
})
"""Startup hooks known to do only what their project documents: (project, member, sha256).
Nearly every closure vendors setuptools and coverage, so reporting their hooks would bury a
planted one; a hook is let through only byte for byte, under its own project and file name."""


def _startup_code(zf: Archive, project: str | None) -> tuple[str, ...]:
    """The ``.pth`` members installed into site-packages (the archive's root, or a
    ``*.data/purelib|platlib/`` folder) holding a line that ``site`` executes: one starting
    with ``import`` followed by a space or a tab (``site.addpackage``'s test), less the
    audited hooks of :data:`AUDITED_STARTUP_HOOKS`."""
    import hashlib

    found = []
    for name, size in zf.sizes.items():
        parts = name.split("/")
        installed = len(parts) == 1 or (len(parts) == 3 and parts[0].endswith(".data")
                                        and parts[1] in ("purelib", "platlib"))
        if not (installed and name.endswith(".pth")):
            continue
        if size > _PTH_MAX_BYTES:
            found.append(name)
            continue
        try:
            text = zf.read(name)
        except (zipfile.BadZipFile, *_ZIPFILE_ERRORS):
            found.append(name)
            continue
        if not any(line.startswith((b"import ", b"import\t")) for line in text.splitlines()):
            continue
        digest = hashlib.sha256(text).hexdigest()
        if (project, name.rsplit("/", 1)[-1], digest) not in AUDITED_STARTUP_HOOKS:
            found.append(name)
    return tuple(sorted(found))


def _first(fields: dict[str, list[str]], key: str) -> str | None:
    values = fields.get(key)
    return values[0] if values else None


_FIELDS = frozenset({"name", "version", "requires-dist", "requires-python", "provides-extra"})


def core_fields(data: bytes) -> dict[str, list[str]]:
    """The METADATA header fields validation reads (lower-cased names), values in order.

    Read directly, not through ``packaging.metadata.parse_email``, whose general parser costs
    far more over a large closure. Folded lines are unfolded (RFC 5322), the body after the
    first blank line is ignored, and undecodable bytes are kept as surrogates.
    """
    ends = [i for i in (data.find(b"\n\n"), data.find(b"\r\n\r\n")) if i >= 0]
    head = data[: min(ends) + 1] if ends else data  # skip the README body before decoding it
    text = head.decode("utf-8", errors="surrogateescape").replace("\r\n", "\n")
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        if not line:
            break  # end of headers: the rest is the long description
        if line[0] in " \t":
            if current is not None:
                current[-1] = f"{current[-1]} {line.strip()}".strip()
            continue
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        current = fields.setdefault(key, []) if sep and key in _FIELDS else None
        if current is not None:
            current.append(value.strip())
    return fields


def unsafe_member(name: str) -> bool:
    """True for a member path an installer could write outside site-packages.

    >>> [unsafe_member(p) for p in ("a/b.py", "/etc/x", "a/../../x", "C:/x")]
    [False, True, True, True]
    """
    if ".." not in name and ":" not in name[:3] and name[:1] not in ("/", "\\"):
        return False  # fast path: RECORDs of big wheels list thousands of plain paths
    norm = name.replace("\\", "/")
    if norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        return True
    return ".." in norm.split("/")


def _unsafe(names: Iterable[str]) -> list[str]:
    """``unsafe_member`` over many names, after substring scans that clear nearly all wheels."""
    listed = list(names)
    joined = "\n" + "\n".join(listed)
    if ".." not in joined and "\\" not in joined and ":" not in joined and "\n/" not in joined:
        return []
    return [n for n in listed if unsafe_member(n)]


def record_issues(
    zf: Archive,
    dist_info: str,
    *,
    deep: bool = False,
    known: Mapping[str, bytes] | None = None,
) -> tuple[str, ...]:
    """RECORD problems of an open wheel, at most ``_MAX_ISSUES`` of them (never raises);
    ``known`` members (METADATA, already read) are hashed without a second read."""
    infos = zf.sizes
    issues = [f"unsafe path {n!r} in the archive" for n in _unsafe(infos)]
    record_name = f"{dist_info}/RECORD"
    if record_name not in infos:
        return (*issues, f"{record_name} is missing")[:_MAX_ISSUES]
    if infos[record_name] > MAX_META_BYTES:
        return (*issues, f"{record_name} is over {MAX_META_BYTES // 2**20} MiB; not read")
    try:
        rows = _record_rows(zf.read(record_name))
    except (ValueError, csv.Error, zipfile.BadZipFile) as exc:
        return (*issues, f"{record_name} unreadable: {exc}")[:_MAX_ISSUES]
    issues += [f"unsafe path {p!r} in RECORD" for p in _unsafe(rows)]
    signatures = (f"{dist_info}/RECORD.jws", f"{dist_info}/RECORD.p7s")
    unlisted = sorted(n for n in infos.keys() - rows.keys() if n not in signatures)
    issues += [f"{n!r} is in the archive but not in RECORD" for n in unlisted]
    # Comprehensions, not a loop of calls: a RECORD can have thousands of rows.
    listed = [p for p in rows if p in infos and p != record_name]
    suspect = [p for p in listed if not rows[p][0] or rows[p][1] != str(infos[p])]
    bad = {p: m for p in suspect if (m := _size_issues(p, infos[p], *rows[p]))}
    issues += [m for msgs in bad.values() for m in msgs]
    known = known or {}
    full = deep or sum(infos.values()) <= SMALL_WHEEL_BYTES
    for path in listed if full else [p for p in known if p in rows and p in infos]:
        if path not in bad and rows[path][0] and len(issues) < _MAX_ISSUES:
            issues += _hash_issues(zf, path, rows[path][0], known.get(path))
    return tuple(issues[:_MAX_ISSUES])


def _record_rows(data: bytes) -> dict[str, tuple[str, str]]:
    """``path -> (hash, size)`` from RECORD's CSV (PEP 376 / the wheel spec). RECORDs without
    quoting (nearly all) are split directly, faster than ``csv``: the last two fields never
    contain commas."""
    text = data.decode("utf-8")
    if '"' in text:
        quoted = csv.reader(io.StringIO(text))
        return {r[0]: (r[1], r[2]) for r in quoted if len(r) >= 3 and r[0]}
    rows = [line.rsplit(",", 2) for line in text.splitlines()]
    return {r[0]: (r[1], r[2]) for r in rows if len(r) == 3 and r[0]}


def _size_issues(path: str, actual: int, digest: str, size: str) -> list[str]:
    # isascii: str.isdigit() is also true for "²", which int() refuses.
    if size.isascii() and size.isdigit() and len(size) <= _MAX_SIZE_DIGITS and int(size) != actual:
        return [f"{path!r}: RECORD says {size} bytes, the archive holds {actual}"]
    if not digest:
        return [f"{path!r} has no hash in RECORD"]
    return []


def _hash_issues(zf: Archive, path: str, digest: str, data: bytes | None) -> list[str]:
    import hashlib

    algo, _, expected = digest.partition("=")
    # shake_* need a digest length RECORD cannot give; md5/sha1 are too weak for the spec.
    if algo not in hashlib.algorithms_guaranteed or algo in _WEAK_OR_XOF:
        return [f"{path!r}: unsupported RECORD hash {algo!r}"]
    try:
        hasher = hashlib.new(algo)
        for piece in zf.chunks(path) if data is None else (data,):  # bounded memory
            hasher.update(piece)
        actual = base64.urlsafe_b64encode(hasher.digest()).rstrip(b"=").decode()
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        return [f"{path!r} cannot be read: {exc}"]
    if actual != expected:
        return [f"{path!r}: {algo} does not match RECORD (content was changed)"]
    return []


_WEAK_OR_XOF = frozenset({"md5", "sha1", "shake_128", "shake_256"})
