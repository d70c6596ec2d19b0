"""What one pass over a dataset file knows besides the row: the package's agents, and the
task indices seen so far (in bounded memory, for files of millions of rows).

Read from the package's parsed configs as written (not Gym's merged view): a row names a
top-level agent instance, and the dataset checks run with or without a package.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envkit.validators.dataset.leaks import DEFAULT_MIN_CHARS, LeakTally

if TYPE_CHECKING:
    from envkit.model.package import Package

__all__ = ["ADAPTER_FORMAT", "AGENT_TYPE", "RowContext", "row_context"]

AGENT_TYPE = "responses_api_agents"
ADAPTER_FORMAT = "adapter-wheels-v1"


@dataclass
class RowContext:
    """What one pass over one file knows besides the row: package facts and seen indices."""

    file: str
    agents: frozenset[str] | None
    """Agent instance names of the package; None when there is no package to check against."""
    instance_types: Mapping[str, str]
    """Instance -> its server type (the first server-type key of its block)."""
    adapter: bool
    vf_env_id: str | None
    agent_vf_env_ids: Mapping[str, str]
    """Agent instance -> the ``vf_env_id`` its implementation block sets (verifiers_agent)."""
    agent_impls: Mapping[str, str] = field(default_factory=dict)
    """Implementation key -> the first agent instance using it, to catch rows that name the
    directory."""
    seen_task_idx: _SeenInts = field(default_factory=lambda: _SeenInts())
    leaks: LeakTally = field(default_factory=LeakTally)
    """Rows whose prompt holds their reference answer (EK507, one finding per file)."""


class _SeenInts:
    """Membership for task indices in bounded memory: a bitmap for 0 <= i < 2**24, else a set."""

    _LIMIT = 1 << 24

    def __init__(self) -> None:
        self._bits = bytearray()  # 2 MiB, allocated on first use
        self._other: set[int] = set()

    def add(self, value: int) -> bool:
        """Record ``value``; False when it was already there."""
        if 0 <= value < self._LIMIT:
            if not self._bits:
                self._bits = bytearray(self._LIMIT >> 3)
            byte, bit = divmod(value, 8)
            if self._bits[byte] >> bit & 1:
                return False
            self._bits[byte] |= 1 << bit
            return True
        if value in self._other:
            return False
        self._other.add(value)
        return True


def row_context(file: str, package: Package | None,
                leak_min_chars: int = DEFAULT_MIN_CHARS) -> RowContext:
    """The facts the row checks of ``file`` compare against (none without a package)."""
    leaks = LeakTally(min_chars=leak_min_chars)
    if package is None:
        return RowContext(file, None, {}, adapter=False, vf_env_id=None, agent_vf_env_ids={},
                          leaks=leaks)
    types: dict[str, str] = {}
    agents: set[str] = set()
    impls: dict[str, str] = {}
    vf_env_ids: dict[str, str] = {}
    for name, body in _blocks(package):
        kind = next(iter(body))
        types.setdefault(name, kind if isinstance(kind, str) else "?")
        if AGENT_TYPE in body:
            agents.add(name)
        agent_impls = body.get(AGENT_TYPE)
        for impl, fields in agent_impls.items() if isinstance(agent_impls, Mapping) else ():
            impls.setdefault(str(impl), name)
            value = fields.get("vf_env_id") if isinstance(fields, Mapping) else None
            if isinstance(value, str) and value:
                vf_env_ids[name] = value
    configs_ok = bool(package.configs) and all(doc.ok for doc in package.configs.values())
    meta = package.manifest_data.get("metadata")
    vf_env_id = meta.get("vf_env_id") if isinstance(meta, Mapping) else None
    return RowContext(
        file,
        agents=frozenset(agents) if configs_ok else None,
        instance_types=types,
        adapter=package.format == ADAPTER_FORMAT,
        vf_env_id=vf_env_id if isinstance(vf_env_id, str) else None,
        agent_vf_env_ids=vf_env_ids,
        agent_impls=impls,
        leaks=leaks,
    )


def _blocks(package: Package) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every ``instance: {server_type: ...}`` block of the parsed configs, in file order."""
    for doc in package.configs.values():
        if isinstance(doc.data, Mapping):
            for name, body in doc.data.items():
                if isinstance(name, str) and isinstance(body, Mapping) and body:
                    yield name, body
