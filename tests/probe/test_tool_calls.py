"""The tool-call oracle against verifiers in Python that read what the policy endpoint makes of
the scripted reply (the real servers: test_probe_reasoning_tools_gym.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from support.probe_fakes import FakeLive, make_ctx

from envkit.policy_server.tool_calls import assistant_message
from envkit.probe.analysis.observations import ProbeRow
from envkit.probe.phases.scoring import ScoringPhase
from envkit.probe.policies import reference_calls

CITIES = ("Paris", "Lagos", "Lima", "Oslo")


def _row(i: int, city: str) -> ProbeRow:
    return ProbeRow("agent", i + 1, {
        "responses_create_params": {"input": [{"role": "user", "content": f"Weather in {city}?"}],
                                    "tools": [{"type": "function", "name": "get_weather"}]},
        "agent_ref": {"type": "responses_api_agents", "name": "agent"},
        "expected_answers": [{"name": "get_weather", "arguments": {"city": city}}]})


def _calls(reply: str) -> list[dict[str, Any]]:
    """The `function_call` items Gym's model server makes of the endpoint's tool calls."""
    message = assistant_message(reply, tools_declared=True)
    return [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
            for c in message["tool_calls"]]


def xlam(reply: str, row: Mapping[str, Any]) -> float:
    """xlam_fc's rule: every expected call matched, nothing more."""
    return 1.0 if _calls(reply) == row["expected_answers"] else 0.0


def name_only(reply: str, row: Mapping[str, Any]) -> float:
    names = [c["name"] for c in _calls(reply)]
    return 1.0 if names and names == [c["name"] for c in row["expected_answers"]] else 0.0


def _scoring(verify: Any) -> Any:
    return ScoringPhase().run(make_ctx(FakeLive(verify), [_row(i, c) for i, c in
                                                          enumerate(CITIES)]))


def test_a_sound_tool_call_verifier_is_clean() -> None:
    result = _scoring(xlam)
    table = result.table["agent"]
    assert result.oracle_of("agent") == "oracle:function-call"
    assert table["oracle:function-call"].mean == 1.0
    assert all(s.mean == 0.0 for s in table.values() if s.kind == "content-free")
    assert {"call:empty", "call:wrong-arguments"} <= set(table)
    assert "oracle:bare" not in table  # no text rendering of a call
    assert result.diagnostics == []  # no EK804: the rows are not dead


def test_a_verifier_that_ignores_arguments_is_gameable() -> None:
    (d,) = _scoring(name_only).diagnostics
    assert d.code == "EK801" and "`call:wrong-arguments` 1" in d.message


def test_the_oracle_field_names_the_calls() -> None:
    row = {"gold": {"type": "function_call", "name": "f", "arguments": '{"a": [1]}'}}
    assert reference_calls(row, "gold") == (("f", {"a": [1]}),)
    assert reference_calls(row) is None  # `gold` is no field the probe reads unless named
