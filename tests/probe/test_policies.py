"""The panel: what each scripted policy replies, by hand."""

from __future__ import annotations

import json

from envkit.policy_server.scripted import BYTES_PER_TOKEN
from envkit.policy_server.tool_calls import assistant_message
from envkit.probe.analysis.job import ProbeJob
from envkit.probe.policies import (
    CONTENT_FREE,
    INJECTION,
    REASONING,
    panel,
    reasoning_reply,
    reference,
    reference_calls,
)

JOB = ProbeJob(concurrency=8, rollouts_per_step=8, max_new_tokens=40, temperature=1.0,
               group_size=4)
ROW = {"responses_create_params": {"input": [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "Reverse \"planet\"."}]},
    "expected_answer": "tenalp", "answer": "other"}


def _replies(row: dict, field: str | None = None) -> dict[str, str | None]:
    return {p.name: p.reply(row, JOB) for p in panel(field)}


def test_oracle_renderings_of_the_reference() -> None:
    replies = _replies(ROW)
    assert replies["oracle:bare"] == "tenalp"
    assert replies["oracle:answer-tags"] == "<answer>tenalp</answer>"
    assert replies["oracle:boxed"] == "\\boxed{tenalp}"
    assert replies["oracle:answer-colon"] == "Answer: tenalp"
    assert replies["oracle:think-answer-tags"].startswith("<think>")
    assert replies["oracle:think-answer-tags"].endswith("</think><answer>tenalp</answer>")


def test_oracle_field_order_and_override() -> None:
    assert reference(ROW) == "tenalp"  # expected_answer before answer
    assert reference({"answer": "7"}) == "7"  # verifiers' rows
    assert reference(ROW, "answer") == "other"
    assert reference({"v": {"target": ["a", "b"]}}, "v.target") == '["a", "b"]'
    assert reference({"target": "x"}) is None  # not a reference field unless named


def test_a_row_without_reference_gets_no_oracle_reply() -> None:
    replies = _replies({"responses_create_params": {"input": "q"}})
    assert all(replies[f"oracle:{n}"] is None
               for n in ("bare", "answer-tags", "boxed", "answer-colon"))
    assert replies["empty"] == ""


def test_content_free_replies_carry_no_answer() -> None:
    replies = _replies(ROW)
    assert replies["echo"] == "Reverse \"planet\"."  # the last user message
    assert len(replies["noise"] or "") == JOB.max_new_tokens * BYTES_PER_TOKEN
    assert replies["whitespace"] is not None and not replies["whitespace"].strip()
    assert replies["skeleton:answer-tags"] == "<answer></answer>"
    assert replies["skeleton:boxed"] == "\\boxed{}"
    assert replies["injection"] == INJECTION
    for policy in CONTENT_FREE:
        assert "tenalp" not in (policy.reply(ROW, JOB) or "")


def test_panel_is_oracles_first_then_content_free() -> None:
    kinds = [p.kind for p in panel()]
    assert kinds == ["oracle"] * 6 + ["content-free"] * (len(CONTENT_FREE) + 2)
    assert len({p.name for p in panel()}) == len(kinds)


XLAM = {"responses_create_params": {"input": [{"role": "user", "content": "Giveaways?"}],
                                    "tools": [{"type": "function", "name": "live_giveaways"}]},
        "expected_answers": [{"name": "live_giveaways", "arguments": {"type": "beta"}},
                             {"name": "live_giveaways", "arguments": {"type": "game"}}]}
MULTI = {"expected_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}
ACTION = {"expected_action": {"type": "function_call", "name": "authenticate_user",
                              "arguments": '{"user_id": "G1", "code": "N2"}'}}
BATCH = {"expected_action": {"type": "function_call_batch", "calls": [
    {"type": "function_call", "name": "a", "arguments": "{}"},
    {"type": "function_call", "name": "b", "arguments": '{"n": 2}'}]}}


def _calls(text: str | None) -> list[tuple[str, dict]]:
    """What the policy endpoint makes of a reply to a request that declares tools."""
    message = assistant_message(text or "", tools_declared=True)
    return [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message["tool_calls"]]


def test_tool_call_references_in_gyms_shapes() -> None:
    assert reference_calls(XLAM) == (("live_giveaways", {"type": "beta"}),
                                     ("live_giveaways", {"type": "game"}))
    assert reference_calls(MULTI) == (("get_weather", {"city": "Paris"}),)
    assert reference_calls(ACTION) == (("authenticate_user", {"user_id": "G1", "code": "N2"}),)
    assert reference_calls(BATCH) == (("a", {}), ("b", {"n": 2}))
    # a call is not a text reference, and --oracle-field still wins
    assert reference(XLAM) is None and reference(MULTI) is None
    assert reference_calls({**MULTI, "expected_answer": "4"}) is None
    assert reference_calls({"gold": [{"name": "f", "arguments": {}}]}, "gold") == (("f", {}),)
    assert reference_calls({"expected_answer": "4", **MULTI}, "expected_call") is not None
    # an expected_action that is a message is a text reference
    assert reference({"expected_action": {"type": "message", "content": "Hello."}}) == "Hello."
    # lists of texts, empty lists and dicts that are no call are not calls
    assert reference_calls({"expected_answers": ["a", "b"]}) is None
    assert reference_calls({"expected_answers": []}) is None


def test_tool_call_oracle_and_content_free_calls() -> None:
    replies = _replies(XLAM)
    assert _calls(replies["oracle:function-call"]) == [("live_giveaways", {"type": "beta"}),
                                                       ("live_giveaways", {"type": "game"})]
    assert all(replies[f"oracle:{n}"] is None
               for n in ("bare", "answer-tags", "boxed", "answer-colon"))
    assert _calls(replies["call:empty"]) == [("", {})]
    wrong = _calls(replies["call:wrong-arguments"])
    assert [name for name, _ in wrong] == ["live_giveaways"] * 2
    assert all(args != {"type": "beta"} and args != {"type": "game"} and set(args) == {"type"}
               for _, args in wrong)
    # a call without arguments has none to get wrong; text rows get no call at all
    assert _replies({"expected_call": {"name": "ping", "arguments": {}}})[
        "call:wrong-arguments"] is None
    assert _replies(ROW)["call:empty"] is None and _replies(ROW)["oracle:function-call"] is None


def test_reasoning_renderings() -> None:
    names = [n for n, _ in REASONING]
    after, wrong, only = (reasoning_reply(n, "tenalp", "<answer>{}</answer>") for n in names)
    assert after.endswith("</think><answer>tenalp</answer>") and "tenalp" not in after[:-24]
    assert wrong == "<think>The answer is tenalp.</think><answer>none</answer>"
    assert only == "<think>The answer is tenalp.</think>"
    assert reasoning_reply("reasoning:wrong-final", "41", "\\boxed{{{}}}").endswith(
        "\\boxed{42}")
    assert _replies(ROW)["skeleton:think-junk"] == "<think></think>a"
