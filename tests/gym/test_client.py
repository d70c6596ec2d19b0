"""The Gym client and rows, no servers needed: answers parsed into Rollouts, routing, the
liveness probe that ends a batch early, row loading and expansion, the results files."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")  # the `train` extra: RolloutSummary lives with the trainer

from toy_envs import (
    char_pattern_rows,
    digit_addition_rows,
    make_native_package,
    write_dataset,
)

from envkit.gym import (
    PolicyEndpoint,
    RolloutAbortedError,
    RuntimeOptions,
    ServerInfo,
    collect,
    expand_rows,
    load_rows,
    mean_reward_by_agent,
    write_results,
)
from envkit.gym.client import result_from_record
from envkit.rollout import RolloutSummary

RECORD = {
    "responses_create_params": {"input": [{"role": "user", "content": "hi"}]},
    "agent_ref": {"type": "responses_api_agents", "name": "char_pattern_simple_agent"},
    "response": {
        "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "role": "assistant", "prompt_token_ids": [1, 2],
                    "generation_token_ids": [5, 6, 7], "generation_log_probs": [-1.0, -2.0, -0.5],
                    "content": [{"type": "output_text", "text": "aab"}]}],
    },
    "reward": 0.25,
}



def test_result_from_record_carries_tokens_logprobs_and_truncation() -> None:
    result = result_from_record(0, "a", RECORD)
    assert result.ok
    assert result.reward == 0.25
    assert result.prompt_ids == (1, 2)
    assert result.completion_ids == (5, 6, 7)
    assert result.generation_logprobs == (-1.0, -2.0, -0.5)
    assert result.truncated


def test_missing_reward_is_a_failure() -> None:
    result = result_from_record(3, "a", {**RECORD, "reward": None})
    assert not result.ok
    assert "reward" in result.failure_reason


def test_collect_marks_unreachable_rows_failed_and_finishes_the_rest() -> None:
    rows = [{"agent_ref": {"name": "dead"}}, {"agent_ref": {"name": "unknown"}}]

    def url_for(agent: str) -> str:
        if agent == "unknown":
            raise KeyError(agent)
        return "http://127.0.0.1:9/run"  # discard port: connection refused

    results = collect(rows, url_for, concurrency=2, timeout_s=5)
    assert [r.index for r in results] == [0, 1]
    assert "unreachable" in results[0].failure_reason
    assert "not running" in results[1].failure_reason
    assert mean_reward_by_agent(results) == {}


def test_collect_aborts_rows_stuck_on_a_dead_server_without_waiting_for_the_timeout() -> None:
    """Gym's agent retries a dead resources server forever: the row would hang to its timeout.
    ``abort`` (a liveness probe) ends the batch at the next poll instead."""
    import socket

    with socket.socket() as hang:  # accepts connections, never answers: a stuck agent
        hang.bind(("127.0.0.1", 0))
        hang.listen(8)
        url = f"http://127.0.0.1:{hang.getsockname()[1]}/run"
        rows = [{"agent_ref": {"name": "a"}}] * 3
        polls = []

        def abort() -> str | None:
            polls.append(time.monotonic())
            return "resources server not accepting connections" if len(polls) >= 2 else None

        started = time.monotonic()
        with pytest.raises(RolloutAbortedError, match="not accepting connections"):
            collect(rows, lambda _a: url, concurrency=2, timeout_s=60, abort=abort, poll_s=0.1)
        assert len(polls) == 2
        assert time.monotonic() - started < 30  # not the 60 s row timeout


def test_expand_rows_sets_sampling_and_gym_indices() -> None:
    rows = expand_rows(char_pattern_rows(2), num_repeats=3, temperature=0.7, max_tokens=9)
    assert len(rows) == 6
    assert {(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows} == {
        (t, k) for t in range(2) for k in range(3)}
    assert rows[0]["responses_create_params"]["temperature"] == 0.7
    assert rows[0]["responses_create_params"]["max_output_tokens"] == 9


def test_load_rows_limit_and_bad_lines(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d", digit_addition_rows(5))
    assert len(load_rows(data, limit=2)) == 2
    (data / "training.jsonl").write_text('{"a": 1}\n[1]\n')
    with pytest.raises(ValueError, match=r"training.jsonl:2: EK501"):
        load_rows(data)
    with pytest.raises(FileNotFoundError, match="EK500"):
        load_rows(data, split="validation")


def test_write_results_puts_failures_in_a_sidecar(tmp_path: Path) -> None:
    ok = result_from_record(0, "a", RECORD)
    bad = result_from_record(1, "a", {"reward": "x"})
    sidecar = write_results(tmp_path / "r.jsonl", [ok, bad])
    assert json.loads((tmp_path / "r.jsonl").read_text())["reward"] == 0.25
    assert sidecar is not None
    assert "failure_reason" in json.loads(sidecar.read_text())
    assert RolloutSummary((ok, bad), {}).exit_code == 1
    assert RolloutSummary((ok,), {}).exit_code == 0


def test_a_dead_server_ends_a_rollout_run_at_the_next_probe_not_the_row_timeout(
    tmp_path: Path,
) -> None:
    """The liveness probe ``envkit rollout`` polls (``GymSession.dead``): a resources server
    whose port refuses connections ends the run in seconds; every unfinished row fails with
    the reason and the run's exit code is 1."""
    import socket

    from envkit.gym import GymServers, GymSession
    from envkit.rollout import run_rollouts

    pkg = make_native_package(tmp_path / "pkg")
    session = GymSession(pkg, PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m"), RuntimeOptions())
    with socket.socket() as hang, socket.socket() as dead:
        hang.bind(("127.0.0.1", 0))
        hang.listen(8)  # the agent: accepts, never answers (it retries the dead server)
        dead.bind(("127.0.0.1", 0))  # the resources server: bound, not listening
        agent = f"http://127.0.0.1:{hang.getsockname()[1]}"
        gone = f"http://127.0.0.1:{dead.getsockname()[1]}"
        session.servers = GymServers(agent, {
            "agent": ServerInfo("agent", "responses_api_agents", "simple_agent", agent),
            "res": ServerInfo("res", "resources_servers", "char_pattern", gone),
        }, {}, tmp_path / "logs")
        rows = [{"agent_ref": {"name": "agent"}}] * 3
        started = time.monotonic()
        summary = run_rollouts(session.servers, rows, concurrency=2, timeout_s=120,
                               abort=session.dead)
    assert time.monotonic() - started < 30  # not the 120 s row timeout
    assert "not accepting connections: res" in summary.aborted
    assert len(summary.results) == 3 and len(summary.failed) == 3
    assert all("aborted" in r.failure_reason for r in summary.failed)
    assert summary.exit_code == 1
    assert summary.to_json()["aborted"] == summary.aborted
    session.close()
