"""From a validated package, dataset and job JSON to a created GRPO job: two content-addressed
FileSets uploaded, their refs written into the job, the job posted."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envkit.model.package import MANIFEST
from envkit.model.yamlio import YamlReadError, read_mapping
from envkit.platform.errors import PlatformError
from envkit.platform.filesets import ensure_fileset, fileset_name, scan_tree
from envkit.platform.jobs import PROVENANCE_FIELD, JobRef, create_job
from envkit.platform.upload import UploadStats, complete_fileset
from envkit.supply.provenance import run_record

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.model.provenance import ProvenanceDict
    from envkit.platform.http import PlatformClient
    from envkit.platform.upload import Progress

__all__ = ["Published", "SubmitResult", "environment_metadata", "job_spec", "publish",
           "publish_package", "submit_job"]


@dataclass(frozen=True, slots=True)
class Published:
    ref: str
    created: bool  # this run created the FileSet
    stats: UploadStats


@dataclass(frozen=True, slots=True)
class SubmitResult:
    job: dict[str, Any]
    created: bool
    environment: Published
    dataset: Published


def environment_metadata(package: Path) -> tuple[str, dict[str, Any] | None]:
    """``(stem, metadata)`` for the FileSet from the package's manifest; a broken manifest
    (only the library reaches here without validating) sends no ``metadata.environment``."""
    try:
        doc = read_mapping(package / MANIFEST)
    except YamlReadError:
        return package.name, None
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return package.name, None
    adapter = doc["adapter"] if isinstance(doc.get("adapter"), dict) else {}
    env = {
        "format": doc.get("format"),
        "name": meta.get("name") or package.name,
        "adapter_agent": adapter.get("agent") or meta.get("adapter_agent"),
        "hub_id": meta.get("hub_id"),
        "vf_env_id": meta.get("vf_env_id"),
        "config_paths": [p for p in doc.get("config_paths") or [] if isinstance(p, str)],
    }
    return str(env["name"]), {"environment": env}


def publish(client: PlatformClient, workspace: str, root: Path, purpose: str, stem: str,
            progress: Progress, metadata: dict[str, Any] | None = None) -> Published:
    """Find or create the FileSet for this exact content and fill it; idempotent."""
    tree = scan_tree(root, purpose)
    fileset = ensure_fileset(client, workspace, fileset_name(stem, tree.digest), purpose, tree,
                             metadata)
    stats = complete_fileset(client, fileset, tree, progress)
    return Published(fileset.ref, fileset.created, stats)


def publish_package(client: PlatformClient, workspace: str, package: Path,
                    progress: Progress) -> Published:
    stem, metadata = environment_metadata(package)
    return publish(client, workspace, package, "environment", stem, progress, metadata)


def job_spec(job_path: Path, model: str | None) -> dict[str, Any]:
    """The job JSON with ``--model`` written in; read before any upload so a bad job sends
    nothing."""
    spec = json.loads(job_path.read_text(encoding="utf-8"))
    if not isinstance(spec, dict):
        msg = f"{job_path}: the job must be a JSON object"
        raise PlatformError(msg)
    if model:
        spec["model"] = model
    if not spec.get("model"):
        msg = f"{job_path}: no `model` in the job; pass --model WORKSPACE/NAME"
        raise PlatformError(msg)
    return spec


def _record(package: Path, dataset: Path, job_path: Path) -> ProvenanceDict:
    """The provenance the job carries, read before any upload (an unreadable file sends nothing).

    :raises PlatformError: a file cannot be read.
    """
    try:
        return run_record(package, dataset, job_path).to_dict(files=False)
    except OSError as exc:
        msg = f"cannot read {exc.filename or package}: {exc.strerror or exc}"
        raise PlatformError(msg) from None


def submit_job(client: PlatformClient, ref: JobRef, job_path: Path, package: Path,
               dataset: Path, progress: Progress, model: str | None = None) -> SubmitResult:
    spec = job_spec(job_path, model)
    record = _record(package, dataset, job_path)
    env = publish_package(client, ref.workspace, package, progress)
    data = publish(client, ref.workspace, dataset, "dataset", dataset.name, progress)
    spec = {**spec, "environment": env.ref, "dataset": data.ref}
    job, created = create_job(client, ref, spec, {PROVENANCE_FIELD: record})
    return SubmitResult(job, created, env, data)
