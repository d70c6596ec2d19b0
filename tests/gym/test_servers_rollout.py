"""Rollouts through a package's REAL Gym servers (nemo-gym 0.7.0 in its own 3.13 venvs, Ray, uv)
against a tiny random-init policy served by envkit. Slow: one bring-up shared by the library
tests, one more for the CLI run with a dead server (the CLI run end to end is
tests/gym/test_rescore.py's rollout).

Issue #5 acceptance: (a) numeric rewards from a real resources server, (c) killing the resources
server mid-run gives failed + finished rows, a non-zero exit status and no orphan process.
(b) (a converted verifiers env through `verifiers_agent`) is tests/gym/test_harness_rollout.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

pytest.importorskip("torch")

from toy_envs import char_pattern_rows, make_native_package, write_dataset

from envkit.gym import (
    GymRuntime,
    GymRuntimeError,
    PolicyEndpoint,
    RuntimeEvents,
    RuntimeOptions,
    expand_rows,
    unreachable,
)
from envkit.policy_server.server import PolicyServer
from envkit.rollout import run_rollouts
from envkit.trainer.generation.hf import HFBackend
from envkit.trainer.tiny_model import make_tiny_model

pytestmark = pytest.mark.gym

OPTIONS = RuntimeOptions(allow_python_override=True, startup_timeout_s=900)


def _text(record: dict) -> str:
    return "".join(c.get("text", "") for item in record["response"]["output"]
                   if item.get("type") == "message" for c in item.get("content") or [])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("model") / "tiny")


class _Recorder(RuntimeEvents):
    """Every callback, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def on_setup_done(self, venv_dir: Path, seconds: float) -> None:
        self.calls.append(("setup_done", venv_dir))

    def on_launch(self, head_url: str) -> None:
        self.calls.append(("launch", head_url))

    def on_servers_known(self, servers) -> None:
        self.calls.append(("known", sorted(servers)))

    def on_server_ready(self, name: str, seconds: float) -> None:
        self.calls.append(("ready", name))

    def on_ready(self, servers, seconds: float) -> None:
        self.calls.append(("all_ready", sorted(servers.servers)))


@pytest.fixture(scope="module")
def gym(tmp_path_factory: pytest.TempPathFactory, model_dir: Path):
    pkg = make_native_package(tmp_path_factory.mktemp("pkg") / "char-pattern")
    with PolicyServer(HFBackend(model_dir, model_name="tiny")) as policy:
        events = _Recorder()
        runtime = GymRuntime(pkg, PolicyEndpoint(policy.base_url, policy.api_key, "tiny"), OPTIONS,
                             events)
        with runtime as servers:
            yield runtime, servers, events


def test_0_events_in_order_and_a_running_servers_log(gym) -> None:
    runtime, servers, events = gym
    names = sorted(servers.servers)
    kinds = [kind for kind, _ in events.calls]
    assert kinds[:3] == ["setup_done", "launch", "known"]
    assert kinds[-1] == "all_ready" and events.calls[-1][1] == names
    assert ("known", names) in events.calls
    assert sorted(arg for kind, arg in events.calls if kind == "ready") == names
    assert events.calls[1][1] == servers.head_url
    assert runtime.server_log("char_pattern")  # readable while it runs
    assert set(runtime.logs()) == set(names)


def test_a_rollouts_have_numeric_rewards_and_token_data(gym) -> None:
    _, servers, _ = gym
    rows = expand_rows(char_pattern_rows(3), num_repeats=2, temperature=1.0, max_tokens=8)
    summary = run_rollouts(servers, rows, concurrency=3, timeout_s=300)
    assert summary.exit_code == 0, [r.failure_reason for r in summary.failed]
    assert set(summary.mean_reward) == {"char_pattern_simple_agent"}
    for result in summary.results:
        assert 0.0 <= result.reward <= 1.0
        # the reward is char_pattern's: fraction of 'a' over max(len, target_len)
        text = _text(result.record)
        assert result.reward == pytest.approx(text.count("a") / max(len(text), 8))
        assert result.prompt_ids
        assert 0 < len(result.completion_ids) == len(result.generation_logprobs) <= 8
        assert all(lp <= 0 for lp in result.generation_logprobs)


def test_c_killing_the_resources_server_fails_rows_and_leaves_no_orphan(gym) -> None:
    runtime, servers, _ = gym
    victims = [p for p in runtime._tree.alive()
               if "resources_servers/char_pattern" in p.cmdline()]
    assert victims, "resources server process not found"
    killed: list[int] = []

    def kill_after_two(result) -> None:
        if len(killed) == 0 and result.ok:
            for proc in victims:
                proc.send(signal.SIGKILL)
            killed.extend(p.pid for p in victims)

    def dead() -> str | None:  # the liveness probe `envkit rollout` and the trainer poll
        return ", ".join(unreachable(servers.servers)) or None

    rows = expand_rows(char_pattern_rows(4), num_repeats=1, temperature=1.0, max_tokens=4)
    summary = run_rollouts(servers, rows, concurrency=1, timeout_s=600, on_result=kill_after_two,
                           abort=dead)
    assert killed
    assert any(r.ok for r in summary.results)
    assert "char_pattern" in (summary.aborted or "").split(", ")
    assert summary.failed
    assert all(r.failure_reason for r in summary.failed)
    assert summary.exit_code != 0
    tree = runtime._tree
    runtime.close()
    assert tree.alive() == []


def _leftovers(tag: str) -> list[int]:
    """Processes that inherited the run's environment tag and still run."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(
                    "ENVKIT_TEST_TAG") == tag:
                found.append(proc.pid)
        except psutil.Error:
            continue
    for pid in found:  # never leave them behind for the next test either
        os.kill(pid, signal.SIGKILL)
    return found


def test_offline_fails_clearly_on_what_wheels_lacks(tmp_path: Path) -> None:
    """--offline: the first install has no index either, so a native-v1 package (no wheels/)
    cannot even get nemo-gym; the error names the rule and shows uv's reason."""
    pkg = make_native_package(tmp_path / "pkg")
    options = RuntimeOptions(allow_python_override=True, offline=True, cache_dir=tmp_path / "c")
    runtime = GymRuntime(pkg, PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m"), options)
    with pytest.raises(GymRuntimeError) as info, runtime:
        pass
    assert info.value.code == "EK403"
    assert "--offline" in str(info.value)
    assert "nemo-gym" in info.value.log_tail
    assert not list((tmp_path / "c" / "server-venvs").glob("*/.envkit-ready"))


def test_a_server_that_fails_to_start_shows_its_log_and_rule(tmp_path: Path) -> None:
    pkg = make_native_package(tmp_path / "pkg")
    app = pkg / "resources_servers/char_pattern/app.py"
    future = "from __future__ import annotations\n"
    app.write_text(app.read_text().replace(
        future, future + "import envkit_no_such_module  # not in requirements.txt\n", 1))
    runtime = GymRuntime(pkg, PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m"), OPTIONS)
    with pytest.raises(GymRuntimeError) as info, runtime:
        pass
    assert info.value.code == "EK403"
    assert "char_pattern" in str(info.value)
    assert info.value.server == "char_pattern"  # the failed server, parsed once, by the runtime
    assert info.value.stage == "start"
    assert "envkit_no_such_module" in info.value.evidence
    assert "envkit_no_such_module" in info.value.log_tail
    assert runtime._tree is None


def test_wheels_v1_uses_wheels_in_both_installs(tmp_path: Path) -> None:
    """wheels/ is a UV_FIND_LINKS pool for Gym's install (the server needs a wheel that is on no
    index) and then goes into every server venv with --no-index."""
    from wheelfactory import make_wheel

    pkg = make_native_package(tmp_path / "pkg")
    manifest = pkg / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text().replace("native-v1", "wheels-v1"))
    make_wheel(pkg / "wheels", "envkit-toy-scorer", "1.0",
               files={"envkit_toy_scorer/__init__.py": b"SCALE = 1\n"})
    req = pkg / "resources_servers/char_pattern/requirements.txt"
    req.write_text(req.read_text() + "envkit-toy-scorer==1.0\n")
    options = RuntimeOptions(allow_python_override=True, cache_dir=tmp_path / "cache")
    venvs = GymRuntime(pkg, PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m"), options).prepare()
    pythons = sorted(venvs.glob("*/*/.venv"))
    assert len(pythons) == 4
    for venv in pythons:
        assert list(venv.glob("lib/python3.13/site-packages/envkit_toy_scorer-1.0.dist-info")), venv
    assert (venvs / ".envkit-ready").exists()


def test_cli_rollout_with_a_dead_server_stops_in_seconds_not_at_the_row_timeout(
    tmp_path: Path, model_dir: Path
) -> None:
    """`envkit rollout` polls the same liveness probe as the trainer: once the resources
    server is killed, the run ends at the next probe (exit 1, the reason on stderr) instead of
    each row waiting out its 600 s timeout in the agent's retry loop."""
    pkg = make_native_package(tmp_path / "pkg")
    data = write_dataset(tmp_path / "data", char_pattern_rows(64))
    tag = uuid.uuid4().hex
    log = tmp_path / "stderr.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "envkit", "rollout", str(pkg), "--dataset", str(data),
             "--model", str(model_dir), "--max-tokens", "4", "--concurrency", "2",
             "--timeout", "600", "--allow-python-override", "--format", "json"],
            stdout=subprocess.PIPE, stderr=err, text=True,
            env={**os.environ, "ENVKIT_TEST_TAG": tag})
        try:
            deadline = time.monotonic() + 900
            while "reward=" not in log.read_text() and time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text()[-3000:]
                time.sleep(0.5)
            victims = [p for p in psutil.process_iter() if _is_resources_server(p, tag)]
            assert victims, log.read_text()[-3000:]
            for victim in victims:
                victim.kill()
            killed_at = time.monotonic()
            stdout, _ = proc.communicate(timeout=300)
            stopped_in = time.monotonic() - killed_at
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 1, log.read_text()[-3000:]
    assert stopped_in < 120, stopped_in  # probe + teardown, far below the 600 s row timeout
    summary = json.loads(stdout)
    # the probe's reason: Gym's head noticed first ("Gym exited") or a port refused
    assert any(why in summary["aborted"] for why in ("Gym exited", "not accepting connections"))
    assert summary["failed"] >= 1
    assert _leftovers(tag) == []


def _is_resources_server(proc: psutil.Process, tag: str) -> bool:
    try:
        return (proc.environ().get("ENVKIT_TEST_TAG") == tag
                and "resources_servers/char_pattern" in " ".join(proc.cmdline()))
    except psutil.Error:
        return False
