"""The load phase: the oracle's rollouts replayed at rising concurrency, up to the job's.

Level ``c`` sends ``LOAD_ROUNDS * c`` rollouts with ``c`` in flight; a server that dies under
load ends the phase with the levels measured so far and an EK805.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envkit.probe.analysis.load import LoadLevel, knee, levels_for, projected_step_s
from envkit.probe.analysis.verdicts import load_diagnostics
from envkit.probe.phases.session import ProbeAbortedError, expand_rows
from envkit.probe.policies import prompt_key
from envkit.probe.thresholds import LOAD_ROUNDS
from envkit.validators.probe import EK805

if TYPE_CHECKING:
    from collections.abc import Mapping

    from envkit.model.diagnostics import Diagnostic
    from envkit.probe.phases import ProbeContext
    from envkit.probe.policies import Policy

__all__ = ["LoadPhase", "LoadResult"]


@dataclass(frozen=True, slots=True)
class LoadResult:
    name: str
    levels: tuple[LoadLevel, ...]
    concurrency: int
    rollouts_per_step: int
    aborted: str | None = None
    timeout_s: float = 600.0
    where: tuple[str, int | None] = ("nemo-environment.yaml", None)

    @property
    def knee(self) -> int | None:
        return knee(self.levels)

    @property
    def projected_step_s(self) -> float | None:
        return projected_step_s(self.levels, self.rollouts_per_step)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        found = load_diagnostics(self.levels, self.concurrency, self.timeout_s, self.where)
        if self.aborted:
            found.append(EK805.at(self.where[0], self.aborted, line=self.where[1]))
        return found

    def to_dict(self) -> dict[str, Any]:
        return {"levels": len(self.levels), "aborted": self.aborted}


def _replies(ctx: ProbeContext) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(prompt key, reply, row) per probed row: each agent's oracle, else the empty reply."""
    scoring = ctx.results.get("scoring")
    by_name: dict[str, Policy] = {p.name: p for p in ctx.panel}
    out = []
    for agent, rows in ctx.rows.items():
        chosen = getattr(scoring, "oracle_of", lambda a: None)(agent)
        policy = by_name.get(chosen or "") or by_name.get("oracle:bare")
        for row in rows:
            reply = policy.reply(row.data, ctx.job) if policy is not None else None
            out.append((prompt_key(row.data), reply if reply is not None else "", row.data))
    return out


class LoadPhase:
    name = "load"

    def run(self, ctx: ProbeContext) -> LoadResult:
        items = _replies(ctx)
        ctx.live.answer({key: reply for key, reply, _ in items}, "")
        levels = levels_for(ctx.job.concurrency)
        measured: list[LoadLevel] = []
        aborted = None
        total = sum(level * LOAD_ROUNDS for level in levels)
        with ctx.progress.phase(self.name, total) as advance:
            for level in levels:
                try:
                    measured.append(_level(ctx, [row for _, _, row in items], level, advance))
                except ProbeAbortedError as exc:
                    aborted = f"the servers stopped serving at concurrency {level}: {exc}"
                    break
        return LoadResult(self.name, tuple(measured), ctx.job.concurrency,
                          ctx.job.rollouts_per_step, aborted, ctx.thresholds.rollout_timeout_s,
                          ctx.where_of(""))


def _level(ctx: ProbeContext, rows: list[Mapping[str, Any]], level: int,
           advance: Any) -> LoadLevel:
    count = level * LOAD_ROUNDS
    picked = list(itertools.islice(itertools.cycle(rows), count)) if rows else []
    batch = expand_rows(picked, num_repeats=1, temperature=ctx.job.temperature,
                        max_tokens=ctx.job.max_new_tokens)
    t0 = time.monotonic()
    sent = ctx.live.send(batch, level, ctx.thresholds.patience_s,  # slow is EK806, not a failure
                         on_done=lambda s: advance(1))
    wall = time.monotonic() - t0
    failed = [s for s in sent if not s.rollout.ok]  # a masked sample still came back
    return LoadLevel(level, len(sent), tuple(s.latency_s for s in sent if s.rollout.ok),
                     len(failed), wall, failed[0].failure if failed else None)
