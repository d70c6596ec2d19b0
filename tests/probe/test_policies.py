"""The panel: what each scripted policy replies, by hand."""

from __future__ import annotations

from envkit.endpoint.scripted import BYTES_PER_TOKEN
from envkit.probe.job import ProbeJob
from envkit.probe.policies import CONTENT_FREE, INJECTION, panel, reference

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
    assert kinds == ["oracle"] * 4 + ["content-free"] * len(CONTENT_FREE)
    assert len({p.name for p in panel()}) == len(kinds)
