"""Compose provenance records from what is on disk, and write them (``provenance.json``).

The record's shape and what its digests cover are ``envkit.model.provenance``'s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from envkit import __version__
from envkit.model.lock import LOCK_NAME
from envkit.model.package import load_package
from envkit.model.provenance import (
    DATASET_PURPOSE,
    PROVENANCE_NAME,
    Provenance,
    closure_versions,
    package_tree,
    sha256_bytes,
)
from envkit.model.tree import hash_files, walk_files
from envkit.supply.atomic import write_text

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["dataset_digest", "package_record", "run_record", "write_provenance"]


def package_record(root: Path, *, dataset: Path | None = None,
                   gym_version: str | None = None) -> Provenance:
    """The record of the package at ``root`` as it is now (with its per-file list).

    ``gym_version`` is the image's Gym version the package was built for; it is used when
    the closure pins none (native-v1 installs ``nemo-gym==<image version>`` itself).

    :raises OSError: a file cannot be read.
    """
    pkg = load_package(root)
    regular = [p for p, e in pkg.entries.items() if e.kind == "file"]
    hashed = pkg.provenance.actual if pkg.provenance else None  # hashed at load: reuse it
    tree = hashed if hashed is not None else package_tree(root, regular)
    lock = pkg.lock.lock if pkg.lock else None
    versions = closure_versions(lock, [t for s in pkg.servers for t in s.texts.values()])
    recorded = pkg.provenance.record if pkg.provenance else None
    fallback = {"gym_version": gym_version or (recorded.gym_version if recorded else None),
                "verifiers_version": recorded.verifiers_version if recorded else None}
    versions = {**{k: v for k, v in fallback.items() if v}, **versions}
    lock_bytes = (root / LOCK_NAME).read_bytes() if LOCK_NAME in regular else None
    return Provenance(
        envkit_version=__version__, package_name=pkg.name, package_format=pkg.format,
        package_sha256=tree.digest, package_files={f.path: f.sha256 for f in tree.files},
        lock_sha256=sha256_bytes(lock_bytes) if lock_bytes is not None else None,
        target=(lock.target or None) if lock else None, dataset_sha256=dataset_digest(dataset),
        gym_version=versions.get("gym_version"),
        verifiers_version=versions.get("verifiers_version"),
    )


def dataset_digest(dataset: Path | None) -> str | None:
    """The dataset directory's digest (the one its FileSet is named by); None without one."""
    if dataset is None or not dataset.is_dir():
        return None
    return hash_files(dataset, walk_files(dataset), DATASET_PURPOSE).digest


def run_record(package: Path, dataset: Path | None, job: Path | None = None) -> Provenance:
    """What a job or run used: the package as it is now, the dataset and the job file.

    :raises OSError: a file cannot be read.
    """
    record = package_record(package, dataset=dataset).summary()
    job_sha = sha256_bytes(job.read_bytes()) if job is not None else None
    return replace(record, job_sha256=job_sha)


def write_provenance(out_dir: Path, record: Provenance) -> Path:
    """``out_dir/provenance.json``, whole or not at all (the one writer)."""
    return write_text(out_dir / PROVENANCE_NAME, record.dumps())
