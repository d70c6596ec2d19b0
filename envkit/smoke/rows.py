"""Which rows a smoke run sends: the dataset's first N per agent, else one minimal row.

The dataset is read by the runtime's reader (``envkit.gym.rows_by_agent``, over the
validator's ``envkit.model.dataset``), never parsed here.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from envkit.gym import rows_by_agent
from envkit.policy_server.scripted import completion_for_row, prompt_text

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["SMOKE_PROMPT", "dataset_rows", "rows_for", "scripted_answers"]

SMOKE_PROMPT = "envkit smoke: answer briefly."


def dataset_rows(dataset: Path | None, per_agent: int) -> dict[str, list[dict[str, Any]]]:
    """The first ``per_agent`` rows of ``training.jsonl`` (then ``validation.jsonl``) for each
    ``agent_ref.name``; static validation has already reported any bad line."""
    found = rows_by_agent(dataset, per_agent) if dataset is not None else {}
    return {agent: [r.data for r in rows] for agent, rows in found.items()}


def rows_for(agent: str, from_dataset: list[dict[str, Any]],
             per_agent: int) -> list[dict[str, Any]]:
    """Rows to run for ``agent`` (indexed as ``gym eval run`` indexes them)."""
    base = from_dataset or [{
        "responses_create_params": {"input": [{"role": "user", "content": SMOKE_PROMPT}]},
        "agent_ref": {"type": "responses_api_agents", "name": agent},
    }]
    return [{**copy.deepcopy(base[i % len(base)]), "_ng_task_index": i % len(base),
             "_ng_rollout_index": i // len(base)} for i in range(per_agent)]


def scripted_answers(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Prompt text -> the row's own answer, for the rows that carry one."""
    answers = {}
    for row in rows:
        answer = completion_for_row(row)
        params = row.get("responses_create_params")
        if answer is not None and isinstance(params, Mapping):
            answers[prompt_text(params.get("input"))] = answer
    return answers
