"""Prompt order: the file's row order every epoch (the platform compiles ``shuffle: false``) and
a cursor, so a resumed run sees the same rows.

Why a cursor and not ``step * prompts_per_step``: dynamic sampling draws a variable number of
prompts per step, so the position is state that the checkpoint carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PromptSampler", "SamplerState"]


@dataclass(frozen=True, slots=True)
class SamplerState:
    epoch: int = 0
    position: int = 0


class PromptSampler:
    def __init__(self, rows: list[dict[str, Any]], state: SamplerState | None = None) -> None:
        if not rows:
            msg = "the dataset has no training rows"
            raise ValueError(msg)
        self._rows = rows
        self.state = state or SamplerState()

    def take(self, n: int) -> list[tuple[int, dict[str, Any]]]:
        """Next ``n`` (row index, row) pairs in file order; rolls over into the next epoch."""
        taken: list[tuple[int, dict[str, Any]]] = []
        epoch, pos = self.state.epoch, self.state.position
        while len(taken) < n:
            if pos >= len(self._rows):
                epoch, pos = epoch + 1, 0
            taken.append((pos, self._rows[pos]))
            pos += 1
        self.state = SamplerState(epoch, pos)
        return taken
