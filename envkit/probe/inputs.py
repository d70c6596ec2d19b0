"""The probe's inputs, read once at the edge: rows per agent, the job, Gym manifests.

Read through the validator's own readers, so what the probe sends is what ``envkit validate``
checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envkit.gym.rows import rows_by_agent
from envkit.model.jobfile import load_job
from envkit.model.jobspec import grpo_settings
from envkit.model.yamlio import parse_yaml
from envkit.probe.analysis.declared import server_blocks
from envkit.probe.analysis.job import ProbeJob, probe_job
from envkit.probe.analysis.observations import ProbeRow

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.model.package import Package

__all__ = ["gym_manifests", "probe_rows", "read_job"]


def probe_rows(dataset: Path, limit: int) -> dict[str, list[ProbeRow]]:
    """The first ``limit`` rows of each agent, agents in name order; lines that name no agent
    are passed over (EK501/EK503 said so)."""
    found = rows_by_agent(dataset, limit, ("training",))
    return {agent: [ProbeRow(agent, r.line, r.data) for r in rows]
            for agent, rows in sorted(found.items()) if agent}


def read_job(path: Path | None) -> ProbeJob:
    """The job's numbers (the job model's defaults without a job).

    :raises JobSpecError: the job's ``training`` block cannot be read.
    """
    if path is None:
        return probe_job(grpo_settings({"training": {"type": "grpo"}}))
    return probe_job(grpo_settings(load_job(path).data), str(path))


def gym_manifests(pkg: Package) -> dict[str, Any]:
    """Path -> data of every readable Gym ``manifest.yaml`` that names one of the package's
    resources servers."""
    servers = {impl for _, _, kind, impl, _ in server_blocks(pkg) if kind == "resources_servers"}
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
