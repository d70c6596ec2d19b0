"""The reasoning phase against a verifier in Python (the real servers: test_probe_gym.py):
what each kind of verifier earns from the reasoning renderings, and the verdicts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from support.probe_fakes import WORDS, FakeLive, make_ctx, make_row

from envkit.probe.phases import ProbeContext
from envkit.probe.phases.reasoning import ReasoningPhase, ReasoningResult
from envkit.probe.phases.scoring import ScoringPhase

THINK = re.compile(r"<think>.*?</think>", re.S)


def _final(text: str) -> str:
    tagged = re.findall(r"<answer>(.*?)</answer>", text, re.S)
    return (tagged[-1] if tagged else text).strip()


def strips(reply: str, row: Mapping[str, Any]) -> float:
    return 1.0 if _final(THINK.sub("", reply)) == row["expected_answer"] else 0.0


def anywhere(reply: str, row: Mapping[str, Any]) -> float:
    return 1.0 if row["expected_answer"] in reply else 0.0


def whole(reply: str, row: Mapping[str, Any]) -> float:
    return 1.0 if reply.strip() == row["expected_answer"] else 0.0


def think_format(reply: str, row: Mapping[str, Any]) -> float:
    """A format reward: a closed think block and anything after it (the Soup#814 case)."""
    return 1.0 if re.fullmatch(r"\s*<think>.*?</think>\s*\S.*", reply, re.S) else whole(reply, row)


def _probe(verify: Any) -> tuple[ProbeContext, ReasoningResult]:
    ctx = make_ctx(FakeLive(verify), [make_row(i, w) for i, w in enumerate(WORDS)])
    ctx.results["scoring"] = ScoringPhase().run(ctx)
    return ctx, ReasoningPhase().run(ctx)


def _codes(ctx: ProbeContext, result: ReasoningResult) -> list[tuple[str, str]]:
    found = [*ctx.results["scoring"].diagnostics, *result.diagnostics]
    return [(d.code, d.severity.value) for d in found]


def test_a_verifier_that_strips_reasoning_is_clean() -> None:
    ctx, result = _probe(strips)
    assert _codes(ctx, result) == []
    means = {p: s.mean for p, s in result.table["agent"].items()}
    assert means == {"reasoning:oracle": 1.0, "reasoning:wrong-final": 0.0,
                     "reasoning:answer-only": 0.0}
    assert len(result.observations) == 3 * len(WORDS) * 2
    (agent,) = result.report()["agents"]
    # bare and tagged answers tie: the replies end with the delimited one
    assert agent["oracle"] == "oracle:answer-tags" and agent["oracle_mean"] == 1.0


def test_an_extractor_of_the_last_answer_tag_needs_no_strip() -> None:
    """The probe fixtures' `sound` verifier: the last `<answer>` wins, so reasoning before it
    costs nothing, and reasoning that merely states the answer earns nothing."""
    def last_tag(reply: str, row: Mapping[str, Any]) -> float:
        return 1.0 if _final(reply) == row["expected_answer"] else 0.0

    ctx, result = _probe(last_tag)
    assert _codes(ctx, result) == []


def test_the_answer_anywhere_in_the_reply_is_gameable() -> None:
    ctx, result = _probe(anywhere)
    assert _codes(ctx, result) == [("EK812", "error")]
    message = result.diagnostics[0].message
    assert "`reasoning:wrong-final` 1" in message and "`reasoning:answer-only` 1" in message


def test_a_verifier_that_reads_reasoning_as_the_answer_warns() -> None:
    ctx, result = _probe(whole)
    assert _codes(ctx, result) == [("EK813", "warning")]
    assert "after reasoning scores 0" in result.diagnostics[0].message


def test_a_reasoning_format_reward_is_caught_by_the_panel() -> None:
    """`<think></think>a` earning full marks is a content-free reply that games the reward
    (EK801); the reasoning renderings are then not played (the panel's finding explains
    them)."""
    ctx, result = _probe(think_format)
    assert _codes(ctx, result) == [("EK801", "error")]
    assert "`skeleton:think-junk` 1" in ctx.results["scoring"].diagnostics[0].message
    assert result.observations == () and result.report()["skipped"] == [
        {"agent": "agent", "reason": "the panel already found EK801"}]


def test_a_tool_call_agent_is_not_played() -> None:
    row = make_row(0, "planet")
    data = {k: v for k, v in row.data.items() if k != "expected_answer"}
    data["expected_call"] = {"name": "f", "arguments": {"x": 1}}

    def calls(reply: str, row: Mapping[str, Any]) -> float:
        return 1.0 if '"arguments": {"x": 1}' in reply and '"name": "f"' in reply else 0.0

    ctx = make_ctx(FakeLive(calls), [type(row)(row.agent, row.line, data)])
    ctx.results["scoring"] = scoring = ScoringPhase().run(ctx)
    assert scoring.oracle_of("agent") == "oracle:function-call" and scoring.diagnostics == []
    result = ReasoningPhase().run(ctx)
    assert result.observations == () and result.skipped == {
        "agent": "the reference is a function call"}


def test_a_verifier_that_requires_the_reasoning_format_is_sound() -> None:
    """An R1-style reward (a think block, then the tagged answer): only the oracle written with
    reasoning scores, so it is the oracle; nothing is gameable, and the reasoning renderings
    are not played (they would compare against a reply that already reasons)."""
    def r1(reply: str, row: Mapping[str, Any]) -> float:
        shaped = re.fullmatch(r"\s*<think>.+?</think>\s*<answer>(.*?)</answer>\s*", reply, re.S)
        return 1.0 if shaped and shaped.group(1).strip() == row["expected_answer"] else 0.0

    ctx, result = _probe(r1)
    scoring = ctx.results["scoring"]
    assert scoring.oracle_of("agent") == "oracle:think-answer-tags"
    assert _codes(ctx, result) == []
    assert result.skipped == {"agent": "the reference scores only after reasoning"}
