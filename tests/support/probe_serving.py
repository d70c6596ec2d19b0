"""A stand-in for Gym's ``/run`` behind the probe session's ``serving``/``send``: each row's
prompt goes to the engine the phase serves (a real ``GenerationBackend``), sampled with the
row's own sampling fields and seed, and the reply is scored by a verifier in Python. For the
fast tests of ``envkit probe --model``'s phase and outputs."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from envkit.gym.rollout import Rollout
from envkit.policy_server.generation import GenerationBackend, SamplingParams
from envkit.probe.analysis.job import ProbeJob
from envkit.probe.analysis.observations import RewardScale
from envkit.probe.phases import ProbeContext
from envkit.probe.phases.model import ModelPhase
from envkit.probe.phases.session import Sent
from envkit.probe.policies import panel
from envkit.probe.thresholds import Thresholds
from support.probe_fakes import make_row

__all__ = ["JOB", "Phase", "ServingLive", "by_index", "serving_ctx"]

JOB = ProbeJob(concurrency=4, rollouts_per_step=8, max_new_tokens=8, temperature=1.0,
               group_size=4, prompts_per_step=2, top_k=5, seed=7)
Verify = Callable[[str, Mapping[str, Any]], float]


class ServingLive:
    """Gym's ``/run`` in Python: the row to the served engine, the reply to ``verify``;
    ``fails(row)`` makes that rollout fail instead (a verifier that raised)."""

    def __init__(self, verify: Verify, fails: Callable[[Mapping[str, Any]], bool] = lambda r: False
                 ) -> None:
        self.verify, self.fails = verify, fails
        self.engine: GenerationBackend | None = None
        self.replies: list[str] = []
        self.requests: list[SamplingParams] = []

    @contextlib.contextmanager
    def serving(self, engine: GenerationBackend) -> Iterator[None]:
        self.engine = engine
        try:
            yield
        finally:
            self.engine = None

    def send(self, rows: Sequence[Mapping[str, Any]], concurrency: int, timeout_s: float,
             on_done: Callable[[Sent], None] | None = None) -> list[Sent]:
        assert self.engine is not None, "the phase sends only while it serves its engine"
        out = []
        for i, row in enumerate(rows):
            params = row["responses_create_params"]
            extra = json.loads(params["metadata"]["extra_body"])
            sampling = SamplingParams(temperature=params["temperature"], seed=extra["seed"],
                                      max_tokens=params["max_output_tokens"],
                                      top_k=extra.get("top_k"))
            self.requests.append(sampling)
            (generated,) = self.engine.generate([params["input"]], sampling)
            reply = generated.completions[0].text
            self.replies.append(reply)
            rollout = (Rollout.failed(i, "agent", "verify raised", dict(row)) if self.fails(row)
                       else Rollout.from_turns(i, "agent", self.verify(reply, row), (), False,
                                               dict(row)))
            sent = Sent(rollout, 0.01)
            if on_done:
                on_done(sent)
            out.append(sent)
        return out


class Phase(ModelPhase):
    """The phase with its engine handed in (loading a model dir is ``make_backend``'s)."""

    def __init__(self, tmp: Path, engine: GenerationBackend) -> None:
        if not (tmp / "config.json").exists():
            (tmp / "config.json").write_text("{}")
        super().__init__(tmp)
        self.engine = engine

    def load(self) -> GenerationBackend:
        return self.engine


def serving_ctx(live: ServingLive, rows: int = 4, job: ProbeJob = JOB, **th: Any) -> ProbeContext:
    probed = [make_row(i, w) for i, w in enumerate(["planet", "orange", "river", "garden",
                                                    "forest", "meadow"][:rows])]
    return ProbeContext(live, {"agent": probed}, job, Thresholds(**th), panel(), RewardScale(),
                        {"agent": ("cfg.yaml", 3)})


def by_index(reply: str, row: Mapping[str, Any]) -> float:
    """Rows 1-3 give every reply 0; row 4 scores replies apart (by their place in the group)."""
    return float(row["_ng_rollout_index"] % 2) if row["_ng_task_index"] == 3 else 0.0
