"""``envkit rollout``: a rollout that errored or timed out is a failure, never a reward of 0.

The agent here is a real HTTP server answering ``/run`` the way Gym 0.7's agents do: a finished
rollout with its reward, a rollout Gym marks as failed (``reward: 0.0`` with
``_ng_failure_class``, as its agents answer on an error), and one that never answers in time.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("psutil")  # the `train` extra

from envkit.gym.types import GymServers, ServerInfo
from envkit.output.render import render
from envkit.output.results import RolloutOutcome
from envkit.rollout import run_rollouts

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

AGENT = "char_pattern_simple_agent"


class _Agent(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        row = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        kind = row["kind"]
        if kind == "slow":
            time.sleep(3)  # past the 1 s row timeout
        answer: dict[str, Any] = {**row, "response": {"output": []}, "reward": 1.0}
        if kind == "error":
            answer |= {"reward": 0.0, "_ng_failure_class": "agent_run_error",
                       "error": "the resources server raised"}
        data = json.dumps(answer).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up on the slow row
            pass


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[GymServers]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    info = ServerInfo(AGENT, "responses_api_agents", "simple_agent", url)
    try:
        yield GymServers(url, {AGENT: info}, {}, tmp_path)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_errored_and_timed_out_rollouts_are_failures_not_zero_rewards(servers, capsys):
    rows = [{"agent_ref": {"name": AGENT}, "kind": kind} for kind in ("ok", "error", "slow")]
    summary = run_rollouts(servers, rows, concurrency=3, timeout_s=1.0)
    assert [r.ok for r in summary.results] == [True, False, False]
    assert [r.reward for r in summary.failed] == [None, None]  # no 0.0 among them
    assert "agent_run_error" in summary.failed[0].failure_reason
    assert summary.mean_reward == {AGENT: 1.0}  # not 1/3: the failures are not scored
    report = summary.to_json()
    assert report["failed"] == 2
    assert report["rollouts"] == 3
    assert summary.exit_code == 1
    render(RolloutOutcome(summary, None), "human")
    assert "failed=2" in capsys.readouterr().out
