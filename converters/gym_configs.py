"""What ``envkit build`` writes into a Gym tree's configs on the way into a package, in memory.

- ``.jsonl`` cannot ship in the package: in-tree ``datasets[]`` entries are dropped from
  configs (Gym would validate them at spin-up), their rows assembled into the dataset instead;
- every package needs a ``policy_model`` instance, and every agent a relay.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from envkit.converters.adapter_pkg import policy_model_config
from envkit.errors import FailedError
from envkit.model.package import SERVER_TYPES
from envkit.model.yamlio import YamlReadError, read_mapping

__all__ = [
    "POLICY_INSTANCE",
    "GymTreeError",
    "TreePlan",
    "add_agents",
    "add_policy_model",
    "rewrite_config",
]

POLICY_INSTANCE = "policy_model"
_POLICY_PATH = {
    "wheels-v1": "configs/policy_model.yaml",
    "native-v1": "responses_api_models/vllm_model/configs/policy_model.yaml",
}
_ROW_FILES = {"train": "training.jsonl", "validation": "validation.jsonl"}


class GymTreeError(FailedError, ValueError):
    """A source is not a Gym server directory or tree, or its files cannot be used."""


@dataclass
class TreePlan:
    """What the package and its dataset directory will hold."""

    files: dict[str, Path | bytes] = field(default_factory=dict)
    dataset: dict[str, Path | bytes] = field(default_factory=dict)
    config_paths: list[str] = field(default_factory=list)
    requirements: dict[str, list[str]] = field(default_factory=dict)
    """Server path -> requirement lines Gym installs (``../..`` lines dropped)."""
    notes: list[str] = field(default_factory=list)
    """What the planner changed, for the build log."""


def rewrite_config(path: Path, rel: str, plan: TreePlan) -> dict[str, Any]:
    """Drop in-tree ``datasets[]`` entries; assemble train/validation rows for the dataset."""
    try:
        data = read_mapping(path, rel)
    except YamlReadError as exc:
        msg = f"{exc} (a Gym config is a mapping of instance names)"
        raise GymTreeError(msg) from None
    changed = False
    for instance, body in data.items():
        for block in _impl_blocks(body):
            changed |= _strip_datasets(str(instance), block, rel, plan)
    if changed:
        header = f"# Written by envkit build from {rel}: in-tree datasets[] moved to the dataset.\n"
        plan.files[rel] = (header + yaml.safe_dump(data, sort_keys=False)).encode()
    return data


def _impl_blocks(body: object) -> list[dict[str, Any]]:
    if not isinstance(body, dict):
        return []
    return [impl for stype, impls in body.items() if stype in SERVER_TYPES
            and isinstance(impls, dict) for impl in impls.values() if isinstance(impl, dict)]


def _strip_datasets(instance: str, block: dict[str, Any], rel: str, plan: TreePlan) -> bool:
    entries = block.get("datasets")
    if not isinstance(entries, list):
        return False
    kept = [e for e in entries if not _in_tree(e)]
    for entry in entries:
        if _in_tree(entry):
            _collect_rows(instance, entry, plan)
    if len(kept) == len(entries):
        return False
    if kept:
        block["datasets"] = kept
    else:
        del block["datasets"]
    plan.notes.append(f"{rel}: dropped {len(entries) - len(kept)} in-tree datasets[] entries "
                      f"of `{instance}`")
    return True


def _in_tree(entry: object) -> bool:
    fpath = entry.get("jsonl_fpath") if isinstance(entry, dict) else None
    return isinstance(fpath, str) and not PurePosixPath(fpath).is_absolute()


def _collect_rows(instance: str, entry: dict[str, Any], plan: TreePlan) -> None:
    """Rows of a ``train``/``validation`` dataset go to training/validation.jsonl, routed to
    the agent instance that declared them (``agent_ref``), as Gym's data preparation does."""
    target = _ROW_FILES.get(str(entry.get("type")))
    source = plan.dataset.get(str(entry["jsonl_fpath"]))
    if target is None or not isinstance(source, Path):
        return
    rows = []
    for number, line in enumerate(source.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            msg = f"{entry['jsonl_fpath']}:{number}: not JSON ({exc}); fix or drop the row"
            raise GymTreeError(msg) from None
        if isinstance(row, dict):
            row.setdefault("agent_ref", {"type": "responses_api_agents", "name": instance})
        rows.append(json.dumps(row, ensure_ascii=False))
    previous = plan.dataset.get(target)
    previous = previous if isinstance(previous, bytes) else b""
    plan.dataset[target] = previous + "".join(r + "\n" for r in rows).encode()


def _server_type(body: object) -> str | None:
    types = [k for k in body if k in SERVER_TYPES] if isinstance(body, dict) else []
    return types[0] if len(types) == 1 else None


def add_policy_model(plan: TreePlan, fmt: str, instances: Mapping[str, Any]) -> None:
    if _server_type(instances.get(POLICY_INSTANCE)) == "responses_api_models":
        return
    path = _POLICY_PATH[fmt]
    text = "# Written by envkit build: the job's own vLLM engine.\n"
    plan.files[path] = (text + yaml.safe_dump(policy_model_config(), sort_keys=False)).encode()
    plan.config_paths.append(path)


def _refs(instances: Mapping[str, Any], server_type: str, field_name: str) -> set[str]:
    refs = (block.get(field_name) for body in instances.values()
            if _server_type(body) == server_type for block in _impl_blocks(body))
    names = (ref.get("name") for ref in refs if isinstance(ref, dict))
    return {name for name in names if isinstance(name, str)}


def add_agents(plan: TreePlan, path: str, instances: Mapping[str, Any]) -> None:
    """A ``simple_agent`` for every resources server no agent uses, and a ``legacy_agent``
    relay for every agent without one (Gym 0.7 deprecates agents without a relay)."""
    extra: dict[str, Any] = {}
    used = _refs(instances, "responses_api_agents", "resources_server")
    for name, body in instances.items():
        if _server_type(body) == "resources_servers" and name not in used:
            extra[f"{name}_simple_agent"] = {"responses_api_agents": {"simple_agent": {
                "entrypoint": "app.py",
                "resources_server": {"type": "resources_servers", "name": name},
                "model_server": {"type": "responses_api_models", "name": POLICY_INSTANCE},
            }}}
    relayed = _refs(instances, "environment_servers", "agent_server")
    agents = [n for n, b in {**instances, **extra}.items()
              if _server_type(b) == "responses_api_agents" and n not in relayed]
    for name in agents:
        extra[f"{name}_environment_server"] = {"environment_servers": {"legacy_agent": {
            "entrypoint": "app.py",
            "agent_server": {"type": "responses_api_agents", "name": name},
        }}}
    if extra:
        text = "# Written by envkit build: agents and relays the server configs lacked.\n"
        plan.files[path] = (text + yaml.safe_dump(extra, sort_keys=False)).encode()
        plan.config_paths.append(path)
