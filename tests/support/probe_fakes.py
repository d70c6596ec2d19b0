"""A stand-in for a running package behind the probe's session interface (``answer`` /
``send``): a verifier in Python, for the fast tests of the probe's phases and renderers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from envkit.gym.rollout import Rollout
from envkit.probe.analysis.job import ProbeJob
from envkit.probe.analysis.observations import ProbeRow, RewardScale
from envkit.probe.phases import ProbeContext
from envkit.probe.phases.session import Sent
from envkit.probe.policies import panel, prompt_key
from envkit.probe.thresholds import Thresholds

__all__ = ["JOB", "WORDS", "FakeLive", "exact", "make_ctx", "make_row", "verify_openapi"]

JOB = ProbeJob(concurrency=8, rollouts_per_step=8, max_new_tokens=32, temperature=1.0,
               group_size=4)
WORDS = ("planet", "orange", "river", "garden")


def make_row(i: int, word: str, prompt: str | None = None) -> ProbeRow:
    text = prompt or f"Reverse {word!r}."
    return ProbeRow("agent", i + 1, {
        "responses_create_params": {"input": [{"role": "user", "content": text}]},
        "agent_ref": {"type": "responses_api_agents", "name": "agent"},
        "expected_answer": word[::-1]})


class FakeLive:
    """Scores the scripted reply with ``verify(reply, row)``; ``fails(concurrency)`` says
    whether a rollout sent at that concurrency errors (a server's in-flight limit); every
    rollout takes ``latency_s``, and fails when that is over the ``timeout_s`` it was sent
    with."""

    def __init__(self, verify: Callable[[str, Mapping[str, Any]], float],
                 fails: Callable[[int], bool] = lambda c: False,
                 openapi: Mapping[str, Any] | None = None, latency_s: float = 0.01) -> None:
        self.verify, self.fails, self.latency_s = verify, fails, latency_s
        self.documents = {"server": dict(openapi or {})}
        self.by_prompt: dict[str, str] = {}
        self.fallback = ""
        self.sent: list[int] = []
        self.lock = threading.Lock()

    def answer(self, by_prompt: Mapping[str, str], fallback: str) -> None:
        self.by_prompt, self.fallback = dict(by_prompt), fallback

    def openapi(self, instance: str) -> Mapping[str, Any]:
        return self.documents.get(instance, {})

    def send(self, rows: Sequence[Mapping[str, Any]], concurrency: int, timeout_s: float,
             on_done: Callable[[Sent], None] | None = None) -> list[Sent]:
        out = []
        for i, row in enumerate(rows):
            self.sent.append(concurrency)
            if self.fails(concurrency):
                rollout = Rollout.failed(i, "agent", "HTTP 500 from agent: 503", dict(row))
            elif self.latency_s > timeout_s:  # the client gives up, as collect does
                rollout = Rollout.failed(i, "agent", f"timed out after {timeout_s:g}s",
                                         dict(row))
            else:
                reply = self.by_prompt.get(prompt_key(row), self.fallback)
                rollout = Rollout.from_turns(i, "agent", self.verify(reply, row), (), False,
                                             dict(row))
            sent = Sent(rollout, min(self.latency_s, timeout_s))
            if on_done:
                on_done(sent)
            out.append(sent)
        return out


def make_ctx(live: FakeLive, rows: list[ProbeRow], **th: Any) -> ProbeContext:
    return ProbeContext(live, {"agent": rows}, JOB, Thresholds(**th), panel(), RewardScale(),
                        {"agent": ("cfg.yaml", 3)}, resources={"agent": ("server",)})


def exact(reply: str, row: Mapping[str, Any]) -> float:
    return 1.0 if reply.strip() == row["expected_answer"] else 0.0


def verify_openapi(**fields: Any) -> dict[str, Any]:
    """An OpenAPI document whose ``/verify`` body declares ``fields`` (name -> default, or
    ``...`` for a required one) next to the base request's two."""
    props = {"responses_create_params": {}, "response": {}}
    props |= {k: {} if v is ... else {"default": v} for k, v in fields.items()}
    required = ["responses_create_params", "response", *(k for k, v in fields.items()
                                                        if v is ...)]
    ref = {"$ref": "#/components/schemas/VerifyRequest"}
    return {"paths": {"/verify": {"post": {"requestBody": {"content": {
                "application/json": {"schema": ref}}}}}},
            "components": {"schemas": {"VerifyRequest": {"properties": props,
                                                         "required": required}}}}
