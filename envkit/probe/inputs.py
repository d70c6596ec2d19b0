"""The probe's inputs, read once at the edge: rows per agent, the job, Gym manifests.

Everything is read through the validator's own readers (``envkit.model.dataset``,
``envkit.model.jobfile``, ``envkit.model.yamlio``), so what the probe sends is what
``envkit validate`` checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envkit.model.dataset import load_dataset
from envkit.model.jobfile import load_job
from envkit.model.jobspec import grpo_settings
from envkit.model.yamlio import parse_yaml
from envkit.probe.analysis.declared import resources_implementations
from envkit.probe.analysis.job import ProbeJob, probe_job
from envkit.probe.analysis.observations import ProbeRow

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.model.package import Package

__all__ = ["gym_manifests", "read_job", "rows_by_agent"]

_TRAINING = "training.jsonl"


def rows_by_agent(dataset: Path, limit: int) -> dict[str, list[ProbeRow]]:
    """The first ``limit`` rows of each agent (``agent_ref.name``) in ``training.jsonl``,
    with their line numbers; lines that are not JSON objects are skipped (EK501 said so)."""
    out: dict[str, list[ProbeRow]] = {}
    for row in load_dataset(dataset).iter_rows(_TRAINING):
        if row.error is not None or not isinstance(row.data, dict):
            continue
        ref = row.data.get("agent_ref")
        agent = str(ref.get("name", "")) if isinstance(ref, Mapping) else ""
        rows = out.setdefault(agent, [])
        if len(rows) < limit:
            rows.append(ProbeRow(agent, row.line, row.data))
    return {agent: rows for agent, rows in sorted(out.items()) if agent}


def read_job(path: Path | None) -> ProbeJob:
    """The job's numbers (the job model's defaults without a job).

    :raises JobSpecError: the job's ``training`` block cannot be read (``envkit validate
        --job`` reported why).
    """
    if path is None:
        return probe_job(grpo_settings({"training": {"type": "grpo"}}))
    doc = load_job(path)
    return probe_job(grpo_settings(doc.data), str(path))


def gym_manifests(pkg: Package) -> dict[str, Any]:
    """Path -> data of every Gym ``manifest.yaml`` in the package that names one of its
    resources servers (``resources_server``); unreadable ones are passed over."""
    servers = resources_implementations(pkg)
    found: dict[str, Any] = {}
    for path in sorted(pkg.entries):
        if path.rsplit("/", 1)[-1] != "manifest.yaml" or pkg.entries[path].kind != "file":
            continue
        try:
            raw = (pkg.root / path).read_bytes()
        except OSError:
            continue
        data = parse_yaml(path, raw).data
        if isinstance(data, Mapping) and data.get("resources_server") in servers:
            found[path] = data
    return found
