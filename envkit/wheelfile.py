"""Read what validation needs from a wheel straight out of the zip, without installing it.

``zipfile`` + ``packaging.metadata`` costs about a millisecond a wheel; this is the hot path
of ``envkit validate`` on a wheelhouse, so nothing here hashes the whole archive by default.
"""

from __future__ import annotations

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

__all__ = ["WheelFile", "read_wheel"]


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


def read_wheel(file: Path, rel: str | None = None) -> WheelFile:
    """Read ``file``; never raises over the wheel's content."""
    rel = rel or f"wheels/{file.name}"
    try:
        name, version, _build, tags = parse_wheel_filename(file.name)
    except InvalidWheelFilename as exc:
        return WheelFile(rel, file.name, error=f"invalid wheel filename: {exc}")
    base = WheelFile(rel, file.name, name=name, version=version, tags=frozenset(tags))
    try:
        with zipfile.ZipFile(file) as zf:
            return _read_archive(base, zf)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        return _replace(base, error=f"unreadable archive: {exc}")


def _read_archive(base: WheelFile, zf: zipfile.ZipFile) -> WheelFile:
    metas = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if not metas:
        return _replace(base, error="no *.dist-info/METADATA in the archive")
    raw, _unparsed = parse_email(zf.read(metas[0]))
    meta_name = raw.get("name")
    if meta_name and base.name and canonicalize_name(meta_name) != base.name:
        msg = f"METADATA names {meta_name!r} but the filename says {base.name!r}"
        return _replace(base, error=msg)
    return _replace(
        base,
        requires_dist=tuple(raw.get("requires_dist", ())),
        requires_python=raw.get("requires_python"),
        provides_extra=tuple(raw.get("provides_extra", ())),
    )


def _replace(wheel: WheelFile, **changes: object) -> WheelFile:
    return WheelFile(**{**wheel.__dict__, **changes})
