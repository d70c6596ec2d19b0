"""Gym rollout rows from a verifiers dataset, the train/validation split, and the JSONL writer.

A row is Gym's ``VerifiersAgentRunRequest``: the prompt exactly as the environment formatted
it, routed by ``task_idx``/``vf_env_id``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envkit.errors import FailedError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

__all__ = [
    "AGENT_REF", "Split", "SplitError", "build_row", "build_rows", "split_rows", "write_jsonl",
]

AGENT_REF = {"type": "responses_api_agents", "name": "verifiers_agent"}


class SplitError(FailedError, ValueError):
    """The requested split is impossible (bad fraction, or no training rows left)."""


@dataclass(frozen=True, slots=True)
class Split:
    training: list[dict[str, Any]]
    validation: list[dict[str, Any]]


def _question(prompt: Any) -> str:
    """The last user message's text: what Gym's create_dataset.py calls ``question``."""
    if isinstance(prompt, str):
        return prompt
    for message in reversed(prompt if isinstance(prompt, list) else []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _info(value: Any) -> dict[str, Any]:
    """verifiers stores ``info`` as a dict or as its JSON text; Gym's request wants a dict."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            return {"text": value}
    return value if isinstance(value, dict) else {}


def build_row(idx: int, example: Mapping[str, Any], vf_env_id: str) -> dict[str, Any]:
    """One rollout row from one dataset example (``prompt``, ``answer``, ``info``, ...)."""
    prompt = example.get("prompt")
    if isinstance(prompt, str):
        prompt = [{"role": "user", "content": prompt}]
    answer = example.get("answer")
    return {
        "task_idx": idx,
        "vf_env_id": vf_env_id,
        "responses_create_params": {"input": prompt if isinstance(prompt, list) else []},
        "agent_ref": dict(AGENT_REF),
        "question": _question(prompt),
        "answer": "" if answer is None else str(answer),
        "task": str(example.get("task") or vf_env_id),
        "example_id": example.get("example_id", idx),
        "info": _info(example.get("info")),
    }


def build_rows(examples: Sequence[Mapping[str, Any]], vf_env_id: str) -> list[dict[str, Any]]:
    return [build_row(i, ex, vf_env_id) for i, ex in enumerate(examples)]


def split_rows(rows: Sequence[dict[str, Any]], fraction: float, seed: int) -> Split:
    """Deterministic split, both files in dataset order: ``max(1, int(n * fraction))`` rows go
    to validation, so a small positive fraction still yields a validation file.

    :raises SplitError: fraction outside [0, 1), or nothing left to train on.
    """
    if not 0.0 <= fraction < 1.0:
        msg = f"--validation-fraction must be in [0, 1), not {fraction}"
        raise SplitError(msg)
    if fraction == 0.0 or not rows:
        return Split(list(rows), [])
    count = max(1, int(len(rows) * fraction))
    if count >= len(rows):
        msg = (f"--validation-fraction {fraction} puts {count} of {len(rows)} row(s) in "
               "validation and leaves no training rows; lower it or load more examples")
        raise SplitError(msg)
    picked = set(random.Random(seed).sample(range(len(rows)), count))
    return Split(
        [r for i, r in enumerate(rows) if i not in picked],
        [r for i, r in enumerate(rows) if i in picked],
    )


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
