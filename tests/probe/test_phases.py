"""The two phases against a stand-in for the running package: a verifier in Python behind the
same ``answer``/``send`` interface the real session has (the real one: test_probe_gym.py).

What is tested here is the phases' own logic: one round per policy, prompts that collide
sent in separate waves, a failure at the probe's concurrency retried alone, a failure never
scored, the load levels up to the job's concurrency.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from support.probe_fakes import JOB, WORDS, FakeLive, exact, make_ctx, make_row, verify_openapi

from envkit.gym.rollout import Rollout
from envkit.probe.phases.load import LoadPhase
from envkit.probe.phases.scoring import ScoringPhase
from envkit.probe.phases.session import Sent
from envkit.probe.policies import panel, prompt_key


def test_sound_scores_only_the_oracle() -> None:
    rows = [make_row(i, w) for i, w in enumerate(WORDS)]
    result = ScoringPhase().run(make_ctx(FakeLive(exact), rows))
    table = result.table["agent"]
    assert table["oracle:bare"].mean == 1.0 and table["oracle:boxed"].mean == 0.0
    assert all(s.mean == 0.0 for s in table.values() if s.kind == "content-free")
    assert result.diagnostics == []
    replying = [p for p in panel() if p.reply(rows[0].data, JOB) is not None]
    assert len(replying) == len(panel()) - 3  # the tool-call policies: not a call reference
    assert len(result.observations) == len(replying) * len(rows) * 2  # repeats


def test_colliding_prompts_are_sent_in_waves() -> None:
    # two rows, one prompt, two answers: one round cannot serve both
    rows = [make_row(0, "planet", "Reverse it."), make_row(1, "orange", "Reverse it.")]
    result = ScoringPhase().run(make_ctx(FakeLive(exact), rows))
    assert dict(result.table["agent"]["oracle:bare"].per_row) == {1: 1.0, 2: 1.0}


def test_a_failure_under_concurrency_is_retried_alone() -> None:
    live = FakeLive(exact, fails=lambda c: c > 1)
    result = ScoringPhase().run(make_ctx(live, [make_row(i, w) for i, w in enumerate(WORDS)]))
    assert all(o.ok for o in result.observations)
    assert result.diagnostics == []
    assert 1 in live.sent and 2 in live.sent


def test_a_failure_alone_is_a_failure_not_a_reward() -> None:
    def crashes_on_empty(reply: str, row: Mapping[str, Any]) -> float:
        if not reply.strip():
            raise AssertionError("never scored")
        return exact(reply, row)

    class Crashing(FakeLive):
        def send(self, rows, concurrency, timeout_s, on_done=None):
            empty = not self.by_prompt.get(prompt_key(rows[0]), "").strip()
            if empty:
                return [Sent(Rollout.failed(i, "agent", "HTTP 500: verify raised", dict(r)),
                             0.01) for i, r in enumerate(rows)]
            return super().send(rows, concurrency, timeout_s, on_done)

    result = ScoringPhase().run(make_ctx(Crashing(crashes_on_empty), [make_row(0, "planet")]))
    table = result.table["agent"]
    assert table["empty"].mean is None and table["empty"].failed == 2
    assert table["whitespace"].failed == 2
    assert [d.code for d in result.diagnostics] == ["EK807"]


def test_load_runs_up_to_the_job_and_reports_failures() -> None:
    rows = [make_row(i, w) for i, w in enumerate(WORDS)]
    live = FakeLive(exact, fails=lambda c: c > 2)
    ctx = make_ctx(live, rows)
    ctx.results["scoring"] = ScoringPhase().run(ctx)
    result = LoadPhase().run(ctx)
    assert [lv.concurrency for lv in result.levels] == [1, 2, 4, 8]
    assert [lv.failed for lv in result.levels] == [0, 0, 12, 24]
    assert [d.code for d in result.diagnostics] == ["EK805"]
    # the oracle the scoring phase chose is what the load replays
    assert set(live.by_prompt.values()) == {w[::-1] for w in WORDS}


def test_a_masked_sample_is_not_a_score() -> None:
    """Gym's judge failsafe answers reward 0.0 with ``mask_sample``: a failure, not a 0."""
    class Masking(FakeLive):
        def send(self, rows, concurrency, timeout_s, on_done=None):
            out = super().send(rows, concurrency, timeout_s, on_done)
            return [Sent(Rollout.from_turns(
                s.rollout.index, "agent", 0.0, (), False,
                {**s.rollout.record, "mask_sample": True, "failure_kind": "judge_failed"}),
                s.latency_s) for s in out]

    result = ScoringPhase().run(make_ctx(Masking(exact), [make_row(0, "planet")]))
    assert all(o.reward is None and "judge_failed" in (o.failure or "")
               for o in result.observations)
    assert [d.code for d in result.diagnostics] == ["EK807"]


def test_the_field_the_verifier_reads_is_found() -> None:
    """wrong_oracle_field: the verifier reads `target` (default ""), the rows carry
    `expected_answer`; copying the reference into `target` makes it score."""
    def reads_target(reply: str, row: Mapping[str, Any]) -> float:
        target = row.get("target", "")
        return 1.0 if target and reply.strip() == target else 0.0

    rows = [make_row(i, w) for i, w in enumerate(WORDS)]
    result = ScoringPhase().run(make_ctx(FakeLive(reads_target), rows))
    (d,) = result.diagnostics
    assert d.code == "EK802" and "reads `target`" in d.message


def test_a_constant_zero_reward_is_dead_not_a_wrong_field() -> None:
    rows = [make_row(i, w) for i, w in enumerate(WORDS)]
    result = ScoringPhase().run(make_ctx(FakeLive(lambda reply, row: 0.0), rows))
    assert [d.code for d in result.diagnostics] == ["EK804"]


def test_the_declared_field_is_tried_first_and_named() -> None:
    """The verify request declares `gold_key` (default ""), a name no list of usual fields
    holds: the probe reads it from the server's OpenAPI document, copies the reference
    there, and names it."""
    def reads_gold_key(reply: str, row: Mapping[str, Any]) -> float:
        gold = row.get("gold_key", "")
        return 1.0 if gold and reply.strip() == gold else 0.0

    doc = verify_openapi(gold_key="", expected_answer=..., extraction_mode="exact")
    live = FakeLive(reads_gold_key, openapi=doc)
    rows = [make_row(i, w) for i, w in enumerate(WORDS)]
    result = ScoringPhase().run(make_ctx(live, rows))
    (d,) = result.diagnostics
    assert d.code == "EK802" and "reads `gold_key`" in d.message
    assert "declares `gold_key` (default '')" not in d.message  # the scored field says it
    # the declared field was the first tried: 4 renderings x 2 rows at most after the panel
    assert len(live.sent) <= len(result.observations) + 4 * 2


def test_a_rollout_slower_than_the_timeout_is_measured_not_failed() -> None:
    """A rollout that takes 1.5x the training timeout would time out in training (EK806), but
    the probe waits for it, so the load curve shows its latency instead of a failure."""
    rows = [make_row(i, w) for i, w in enumerate(WORDS)]
    ctx = make_ctx(FakeLive(exact, latency_s=1.5), rows, rollout_timeout_s=1.0)
    ctx.results["scoring"] = ScoringPhase().run(ctx)
    assert ctx.results["scoring"].diagnostics == []
    result = LoadPhase().run(ctx)
    assert all(lv.failed == 0 for lv in result.levels)
    assert [(d.code, d.severity.value) for d in result.diagnostics] == [("EK806", "warning")]
