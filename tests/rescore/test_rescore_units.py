"""`envkit rescore` without Gym: which servers may be asked again (Gym's reverify mode and the
/seed_session they declare), the run record and the rollouts file as read, the report's
summary and exit status, and the doctests of its pure modules."""

from __future__ import annotations

import doctest
import importlib
import json
from pathlib import Path

import pytest

from envkit.errors import UsageError
from envkit.gym import RunFile, read_run_file, write_run_file
from envkit.output.render import render
from envkit.rescore import RescoreReport, RowScore
from envkit.rescore.run import agent_verifiers, read_rollouts
from envkit.rescore.state import can_reverify


def _seed_doc(*names: str) -> dict:
    refs = [{"$ref": f"#/components/schemas/{n}"} for n in names]
    schema = refs[0] if len(refs) == 1 else {"anyOf": refs}
    return {"paths": {"/seed_session": {"post": {"requestBody": {"content": {
        "application/json": {"schema": schema}}}}}}}


@pytest.mark.parametrize(("mode", "doc", "ok"), [
    ("stateless", None, True),
    ("unsupported", _seed_doc("BaseSeedSessionRequest"), False),
    ("unknown", _seed_doc("ResourcesSeedSessionRequest", "BaseSeedSessionRequest"), True),
    ("unknown", _seed_doc("SandboxSeedRequest"), False),  # seeds per-episode state
    ("unknown", {"paths": {}}, False),  # nothing to judge by: refused
    (None, None, False),
])
def test_which_servers_may_score_again(mode: str | None, doc: dict | None, ok: bool) -> None:
    verdict = can_reverify("judge", mode, doc)
    assert verdict.ok is ok
    assert "`judge`" in verdict.reason


def test_agent_verifiers_follow_the_agents_block() -> None:
    config = {"a": {"responses_api_agents": {"simple_agent": {
        "resources_server": {"type": "resources_servers", "name": "r"},
        "model_server": {"type": "responses_api_models", "name": "policy_model"}}}},
        "b": {"responses_api_agents": {"x": {}}}}
    assert agent_verifiers(config, "a") == ("r",)
    assert agent_verifiers(config, "b") == ()
    assert agent_verifiers(config, "missing") == ()


def test_run_file_round_trip_and_errors(tmp_path: Path) -> None:
    run = RunFile("rollout", "/pkg", "abc", "out.jsonl", "0.7.0", offline=True)
    write_run_file(tmp_path, run)
    assert read_run_file(tmp_path) == run
    with pytest.raises(UsageError, match=r"holds no run\.json"):
        read_run_file(tmp_path / "elsewhere")
    (tmp_path / "run.json").write_text(json.dumps({"command": "rollout"}))
    with pytest.raises(UsageError, match="not a run record"):
        read_run_file(tmp_path)


def test_rollouts_file_is_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"reward": 1}\n\n{"reward": 0}\n')
    assert read_rollouts(path) == [(1, {"reward": 1}), (3, {"reward": 0})]
    path.write_text('{"reward": 1}\n[1]\n')
    with pytest.raises(UsageError, match=r"r.jsonl:2: not a JSON object"):
        read_rollouts(path)


def _report(*rows: RowScore) -> RescoreReport:
    return RescoreReport("/run", "/pkg", "rollouts.jsonl", True, rows)


def test_summary_counts_changes_and_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    report = _report(RowScore(1, "a", 0.0, 1.0, "rescored"), RowScore(2, "a", 0.5, 0.5, "rescored"),
                     RowScore(3, "a", 1.0, 0.0, "rescored"))
    summary = report.summary()
    assert (summary["changed"], summary["increased"], summary["decreased"]) == (2, 1, 1)
    assert [r.line for r in report.changed] == [1, 3]
    assert report.exit_code == 0
    assert render(report, "human") == 0
    out = capsys.readouterr().out
    assert "line 1 [a]: 0 -> 1" in out and "line 2" not in out  # unchanged rows are counted
    refused = _report(RowScore(1, "a", 0.0, None, "refused", "`r` keeps state"))
    assert refused.exit_code == 1 and render(refused, "human") == 1
    assert "refused: `r` keeps state" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["state", "run"])
def test_doctests(name: str) -> None:
    failed, attempted = doctest.testmod(importlib.import_module(f"envkit.rescore.{name}"))
    assert attempted > 0 and failed == 0
