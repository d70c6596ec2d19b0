"""Which rows a smoke run sends: the dataset's first N per agent, else one minimal row."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from envkit.endpoint.scripted import completion_for_row, prompt_text

__all__ = ["SMOKE_PROMPT", "dataset_rows", "rows_for", "scripted_answers"]

SMOKE_PROMPT = "envkit smoke: answer briefly."


def dataset_rows(dataset: Path | None, per_agent: int) -> dict[str, list[dict[str, Any]]]:
    """The first ``per_agent`` rows of ``training.jsonl`` for each ``agent_ref.name``.

    Static validation has already checked the file (EK5xx), so a bad line is skipped here.
    """
    found: dict[str, list[dict[str, Any]]] = {}
    if dataset is None:
        return found
    for split in ("training", "validation"):
        path = dataset / f"{split}.jsonl"
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                row = _row(line)
                agent = (row or {}).get("agent_ref", {}).get("name") if row else None
                if isinstance(agent, str) and len(found.setdefault(agent, [])) < per_agent:
                    found[agent].append(row)
    return found


def _row(line: str) -> dict[str, Any] | None:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    ok = isinstance(row, dict) and isinstance(row.get("agent_ref"), dict)
    return row if ok else None


def rows_for(agent: str, from_dataset: list[dict[str, Any]], per_agent: int) -> list[dict]:
    """Rows to run for ``agent`` (indexed as ``gym eval run`` indexes them)."""
    base = from_dataset or [{
        "responses_create_params": {"input": [{"role": "user", "content": SMOKE_PROMPT}]},
        "agent_ref": {"type": "responses_api_agents", "name": agent},
    }]
    out = []
    for i in range(per_agent):
        row = copy.deepcopy(base[i % len(base)])
        row["_ng_task_index"], row["_ng_rollout_index"] = i % len(base), i // len(base)
        out.append(row)
    return out


def scripted_answers(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Prompt text -> the row's own answer, for the rows that carry one."""
    answers = {}
    for row in rows:
        answer = completion_for_row(row)
        params = row.get("responses_create_params")
        if answer is not None and isinstance(params, Mapping):
            answers[prompt_text(params.get("input"))] = answer
    return answers
