"""Prompt rows for Gym: read from a dataset directory, expanded as ``gym eval run`` does.

Rows are read through the validator's own dataset model (``envkit.model.dataset``), so a file that
trains or rolls out here is read exactly as ``envkit validate --dataset`` read it.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from envkit.model.dataset import load_dataset
from envkit.validators.dataset.rules import EK500, EK501

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from envkit.model.dataset import Row

__all__ = ["expand_rows", "load_rows", "rows_by_agent"]


def load_rows(dataset: Path, split: str = "training",
              limit: int | None = None) -> list[dict[str, Any]]:
    """Rows of ``<dataset>/<split>.jsonl`` (first ``limit``).

    :raises FileNotFoundError: the split's file is missing (EK500).
    :raises ValueError: a line that is not a JSON object (with its line number; EK501).
    """
    name = f"{split}.jsonl"
    model = load_dataset(dataset)
    path = dataset / name
    if name not in model.files:
        msg = f"{path} does not exist ({EK500.code}: the dataset needs {name})"
        raise FileNotFoundError(msg)
    rows: list[dict[str, Any]] = []
    for row in model.iter_rows(name):
        if row.error is not None:
            msg = f"{path}:{row.line}: {EK501.code} line is not JSON ({row.error})"
            raise ValueError(msg)
        if not isinstance(row.data, dict):
            msg = f"{path}:{row.line}: {EK501.code} line is not a JSON object"
            raise ValueError(msg)
        rows.append(row.data)
        if limit is not None and len(rows) >= limit:
            break
    return rows


def rows_by_agent(
    dataset: Path, per_agent: int, splits: Sequence[str] = ("training", "validation"),
) -> dict[str, list[Row]]:
    """The first ``per_agent`` rows of each ``agent_ref.name``, ``splits`` in order, each
    with its line number.

    Lenient where :func:`load_rows` is strict: a line that is no JSON object, or names no
    agent, is passed over (``envkit validate --dataset`` reports it, EK501/EK503), so a gate
    that validated first still sends every row it can.
    """
    model = load_dataset(dataset)
    found: dict[str, list[Row]] = {}
    for split in splits:
        name = f"{split}.jsonl"
        if name not in model.files:
            continue
        for row in model.iter_rows(name):
            data = row.data if row.error is None and isinstance(row.data, dict) else {}
            ref = data.get("agent_ref")
            agent = ref.get("name") if isinstance(ref, dict) else None
            if isinstance(agent, str) and len(found.setdefault(agent, [])) < per_agent:
                found[agent].append(row)
    return found


def expand_rows(rows: Sequence[Mapping[str, Any]], *, num_repeats: int, temperature: float,
                max_tokens: int) -> list[dict[str, Any]]:
    """Repeat each row ``num_repeats`` times with Gym's indices and the sampling overrides
    ``gym eval run`` applies to ``responses_create_params``."""
    out = []
    for task_index, row in enumerate(rows):
        for repeat in range(num_repeats):
            new = copy.deepcopy(dict(row))
            new.setdefault("responses_create_params", {}).update(
                temperature=temperature, max_output_tokens=max_tokens)
            new.update(_ng_task_index=task_index, _ng_rollout_index=repeat)
            out.append(new)
    return out
