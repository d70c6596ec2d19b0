"""``provenance.json``: which package, closure and versions a package, job or run came from.

One record, written in three places: at the package root by ``envkit build`` / ``envkit
convert`` (with every file's SHA-256, so ``validate`` reports files changed since, EK209); on
the job by ``envkit submit``; next to the metrics of ``envkit train``, ``envkit rollout`` and
the probe. The writer is ``envkit.supply.provenance.write_provenance``.

The package digest is ``envkit.model.tree``'s (purpose ``package``) over every regular file
but ``provenance.json`` itself; the dataset digest is the same with purpose ``dataset``. No
timestamps: the same inputs give the same bytes. The reader is lenient.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from envkit.model._paths import PROVENANCE_NAME
from envkit.model.jsonfile import JsonObject, parse_object, read_object
from envkit.model.tree import hash_files

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path

    from envkit.model.lock import Lock
    from envkit.model.tree import FileStat, Tree

__all__ = [
    "DATASET_PURPOSE",
    "PACKAGE_PURPOSE",
    "PROVENANCE_NAME",
    "PROVENANCE_VERSION",
    "CurationDict",
    "Provenance",
    "ProvenanceDict",
    "ProvenanceDoc",
    "closure_versions",
    "from_dict",
    "package_tree",
    "parse_provenance",
    "read_provenance",
    "sha256_bytes",
]

PROVENANCE_VERSION: Literal["1.0"] = "1.0"
PACKAGE_PURPOSE = "package"
DATASET_PURPOSE = "dataset"
_MAX_BYTES = 8 * 1024 * 1024
_CLOSURE = {"nemo-gym": "gym_version", "verifiers": "verifiers_version"}
_PIN = re.compile(r"^\s*(nemo[-_.]gym|verifiers)\s*(?:\[[^\]]*\])?\s*===?\s*([\w.+!-]+)",
                  re.IGNORECASE)


class _PackageRequired(TypedDict):
    name: str | None
    format: str | None
    sha256: str | None


class _PackageDict(_PackageRequired, total=False):
    # Not NotRequired[...]: under postponed annotations Python 3.11 cannot see it.
    files: dict[str, str]


class _LockDict(TypedDict):
    sha256: str | None
    target: str | None


_ClosureDict = TypedDict("_ClosureDict", {"nemo-gym": str | None, "verifiers": str | None})


class _DigestDict(TypedDict):
    sha256: str


class _SplitCountsDict(TypedDict):
    profiled: int
    kept: int


class CurationDict(TypedDict):
    """How ``envkit profile --keep`` chose a curated dataset's rows (its own provenance)."""

    band: list[float]
    pass_threshold: float
    group_size: int
    seed: int
    rows: dict[str, _SplitCountsDict]
    zero_variance_share_before: float | None
    zero_variance_share_after: float | None


class _ProvenanceRequired(TypedDict):
    version: Literal["1.0"]
    envkit_version: str
    package: _PackageDict
    lock: _LockDict | None
    closure: _ClosureDict
    dataset: _DigestDict | None
    job: _DigestDict | None


class ProvenanceDict(_ProvenanceRequired, total=False):
    """The JSON shape (``envkit schema provenance``, version ``1.0``)."""

    curation: CurationDict


@dataclass(frozen=True, slots=True)
class Provenance:
    """The record. Fields a writer did not know (no job at build time) are None."""

    envkit_version: str
    package_name: str | None = None
    package_format: str | None = None
    package_sha256: str | None = None
    package_files: Mapping[str, str] = field(default_factory=dict)
    """``path -> sha256`` of every covered file (only in the package's own copy)."""
    lock_sha256: str | None = None
    target: str | None = None
    """The lock's target (``cp313-manylinux_2_17_x86_64``)."""
    gym_version: str | None = None
    verifiers_version: str | None = None
    dataset_sha256: str | None = None
    job_sha256: str | None = None
    curation: CurationDict | None = None
    """Only in a dataset ``envkit profile --keep`` wrote: the band and the counts."""
    version: str = PROVENANCE_VERSION

    def to_dict(self, *, files: bool = True) -> ProvenanceDict:
        """The JSON shape (``envkit schema provenance``); ``files=False`` drops the file list."""
        package: _PackageDict = {"name": self.package_name, "format": self.package_format,
                                   "sha256": self.package_sha256}
        if files and self.package_files:
            package["files"] = dict(sorted(self.package_files.items()))
        out: ProvenanceDict = {
            "version": PROVENANCE_VERSION,  # this writer's shape, whatever was read
            "envkit_version": self.envkit_version,
            "package": package,
            "lock": {"sha256": self.lock_sha256, "target": self.target}
            if self.lock_sha256 else None,
            "closure": {"nemo-gym": self.gym_version, "verifiers": self.verifiers_version},
            "dataset": {"sha256": self.dataset_sha256} if self.dataset_sha256 else None,
            "job": {"sha256": self.job_sha256} if self.job_sha256 else None,
        }
        if self.curation is not None:
            out["curation"] = self.curation
        return out

    def dumps(self, *, files: bool = True) -> str:
        """The file's text: 2-space JSON, final newline."""
        return json.dumps(self.to_dict(files=files), indent=2) + "\n"

    def summary(self) -> Provenance:
        """The record without the per-file list (what a job or a run carries)."""
        return replace(self, package_files={})


@dataclass(frozen=True, slots=True)
class ProvenanceDoc:
    """``provenance.json`` as read, and the package's files as they are now."""

    path: str = PROVENANCE_NAME
    record: Provenance | None = None
    error: str | None = None
    actual: Tree | None = None
    """The covered files hashed at load (``package_tree``); None when they could not be."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def package_tree(root: Path, regular_files: Iterable[str],
                 stamps: Mapping[str, list[Any]] | None = None, *,
                 seen: Mapping[str, FileStat | None] | None = None,
                 read: Mapping[str, str] | None = None) -> Tree:
    """The package digest over its regular files but the record itself (see ``hash_files``).

    :raises OSError: a file cannot be read.
    """
    covered = (p for p in regular_files if p != PROVENANCE_NAME)
    return hash_files(root, covered, PACKAGE_PURPOSE, stamps, seen, read)


def closure_versions(lock: Lock | None, requirement_texts: Iterable[str] = ()) -> dict[str, str]:
    """``{"gym_version": ..., "verifiers_version": ...}`` as the closure pins them.

    The lock's wheels first (what is vendored), then its ``gym_version``, then ``==`` pins in
    the servers' requirements (native-v1 has no lock). Keys without a pin are left out.
    """
    found: dict[str, str] = {}
    for wheel in lock.wheels if lock else ():
        key = _CLOSURE.get(re.sub(r"[-_.]+", "-", wheel.name).lower())
        if key:
            found.setdefault(key, wheel.version)
    if lock and lock.gym_version:
        found.setdefault("gym_version", lock.gym_version)
    for text in requirement_texts:
        for line in text.splitlines():
            if match := _PIN.match(line):
                key = _CLOSURE[re.sub(r"[-_.]+", "-", match[1]).lower()]
                found.setdefault(key, match[2])
    return found


def read_provenance(path: Path) -> ProvenanceDoc:
    """Read ``path`` (a regular file the package walk found); never raises over content."""
    return _record_of(read_object(path, _MAX_BYTES))


def parse_provenance(raw: bytes) -> ProvenanceDoc:
    """The record in ``raw``, leniently: a wrong-typed field reads as None."""
    return _record_of(parse_object(raw, _MAX_BYTES))


def _record_of(doc: JsonObject) -> ProvenanceDoc:
    if doc.data is None:
        return ProvenanceDoc(error=doc.error)
    return ProvenanceDoc(record=from_dict(doc.data))


def from_dict(data: Mapping[str, Any]) -> Provenance:
    """A record from its JSON shape (``to_dict``), leniently."""
    package, lock = _part(data, "package"), _part(data, "lock")
    closure = _part(data, "closure")
    files = package.get("files")
    return Provenance(
        envkit_version=_text(data, "envkit_version") or "",
        package_name=_text(package, "name"), package_format=_text(package, "format"),
        package_sha256=_text(package, "sha256"),
        package_files={k: v for k, v in files.items() if isinstance(v, str)}
        if isinstance(files, dict) else {},
        lock_sha256=_text(lock, "sha256"), target=_text(lock, "target"),
        gym_version=_text(closure, "nemo-gym"), verifiers_version=_text(closure, "verifiers"),
        dataset_sha256=_text(_part(data, "dataset"), "sha256"),
        job_sha256=_text(_part(data, "job"), "sha256"),
        curation=_curation(data.get("curation")),
        version=_text(data, "version") or "",
    )


def _curation(value: object) -> CurationDict | None:
    """A curation record as written (its shape checked key by key), else None."""
    if not isinstance(value, dict):
        return None
    band, rows = value.get("band"), value.get("rows")
    ints = all(isinstance(value.get(k), int) for k in ("group_size", "seed"))
    if not (isinstance(band, list) and isinstance(rows, dict) and ints
            and isinstance(value.get("pass_threshold"), (int, float))):
        return None
    return cast("CurationDict", value)


def _part(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None
