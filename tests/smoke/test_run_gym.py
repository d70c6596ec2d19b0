"""`envkit smoke` on REAL Gym servers (nemo-gym 0.7.0, Ray, uv): the bundled toy packages pass,
each fixture under fixtures/smoke_* fails with its own diagnosis while `envkit validate` passes,
and an interrupted run leaves no process behind. Slow: each package builds its server venvs once
(cached), then every run is a real bring-up.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from support.paths import REPO_ROOT
from support.proc_marks import MARK, new_mark, survivors
from toy_envs import GYM_TREES, digit_addition_rows, make_native_package, write_dataset

from envkit.schemas import load_schema

pytestmark = [pytest.mark.gym, pytest.mark.network]

ROOT = REPO_ROOT
FIXTURES = ROOT / "fixtures"
ENV = {"ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}  # this machine's 3.13 is older than 3.13.14


def _envkit(*args: str, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envkit", *args], capture_output=True,
                          text=True, timeout=timeout, check=False, cwd=ROOT,
                          env={**os.environ, **ENV})


def _smoke(pkg: Path, *args: str) -> tuple[int, dict]:
    proc = _envkit("smoke", str(pkg), "--format", "json", *args)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    jsonschema.validate(report, load_schema("smoke"))
    return proc.returncode, report


def _validates(pkg: Path, *args: str) -> None:
    proc = _envkit("validate", str(pkg), *args, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _built(src: Path, dest: Path) -> Path:
    """`envkit build --format wheels-v1` (runtime pins vendored: offline-clean)."""
    proc = _envkit("build", str(src), "--format", "wheels-v1", "--arch", "x86_64",
                   "-o", str(dest), timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dest


@pytest.mark.own_ray  # the bring-up as it is without a shared cluster: Gym starts its Ray
def test_char_pattern_passes_through_the_gate(tmp_path: Path, monkeypatch) -> None:
    """`envkit validate PKG --smoke` (the pre-upload gate: the package's settings resolved as
    validate's, one report) on the char_pattern toy; `envkit smoke PKG` itself is every other
    test here, the same spin-up behind both commands."""
    mark = new_mark(monkeypatch)
    pkg = make_native_package(tmp_path / "char-pattern")
    proc = _envkit("validate", "--smoke", str(pkg), "--output-format", "json")
    rc, report = proc.returncode, json.loads(proc.stdout)
    jsonschema.validate(report, load_schema("smoke"))
    assert rc == 0, report
    # the tree was stopped (SIGTERM to every process, then SIGKILL): nothing to say about it
    assert "killed" not in proc.stderr, proc.stderr
    assert report["passed"] and report["stage"] == "done"
    assert {"validate_s", "setup_s", "ready_s", "rollout_s", "teardown_s", "total_s"} <= set(
        report["timings"])  # where a smoke's time goes, teardown included
    assert {s["name"] for s in report["servers"]} == {
        "policy_model", "char_pattern", "char_pattern_simple_agent",
        "char_pattern_environment_server"}
    assert all(s["ready"] and s["ready_s"] > 0 for s in report["servers"])
    (agent,) = report["agents"]
    assert agent["synthetic_rows"] and len(agent["rewards"]) == 1
    assert isinstance(agent["rewards"][0], float)
    by_name = {s["name"]: s for s in report["servers"]}
    assert by_name["char_pattern"]["first_reward"] == agent["rewards"][0]
    assert report["policy_requests"] >= 1
    assert survivors(mark) == []


def test_digit_addition_passes_with_row_derived_answers(tmp_path: Path) -> None:
    """The scripted policy answers each row's expected_answer: every reward is 1.0."""
    pkg = make_native_package(tmp_path / "digit-addition", "digit_addition")
    data = write_dataset(tmp_path / "data", digit_addition_rows(4))
    rc, report = _smoke(pkg, "--dataset", str(data), "--rows", "2")
    assert rc == 0, report
    (agent,) = report["agents"]
    assert agent["rewards"] == [1.0, 1.0]
    assert not agent["synthetic_rows"]


def test_wheels_v1_char_pattern_passes_offline_in_a_namespace(tmp_path: Path) -> None:
    pkg = _built(GYM_TREES / "resources_servers" / "char_pattern", tmp_path / "pkg")
    _validates(pkg, "--offline")
    rc, report = _smoke(pkg, "--offline")
    assert rc == 0, report
    (static,) = report["static"]["packages"]  # the target validate picks: the wheels.lock's
    assert static["path"] == str(pkg) and static["target_source"] == "wheels.lock"
    assert report["offline"] is True
    assert report["isolation"]["kind"] == ("netns" if os.geteuid() == 0 else "proxy")
    assert report["agents"][0]["rewards"]


def _failed_server(report: dict, name: str) -> dict:
    by_name = {s["name"]: s for s in report["servers"]}
    assert name in by_name, report
    server = by_name[name]
    assert server["ready"] is False
    return server


def test_import_error_at_start(monkeypatch) -> None:
    mark = new_mark(monkeypatch)
    pkg = FIXTURES / "smoke_import_error"
    _validates(pkg)
    rc, report = _smoke(pkg)
    assert rc == 1
    assert report["stage"] == "start"
    server = _failed_server(report, "fuzzy_match")
    assert server["failure"]["code"] == "EK403"
    assert "rapidfuzz" in server["failure"]["log_tail"]
    assert survivors(mark) == []


def test_wheel_that_fails_to_import_on_313() -> None:
    pkg = FIXTURES / "smoke_py313_wheel"
    _validates(pkg)
    rc, report = _smoke(pkg)
    assert rc == 1
    server = _failed_server(report, "legacy_scorer_env")
    assert server["failure"]["code"] == "EK406"
    assert "cgi" in server["failure"]["message"]


def test_string_reward() -> None:
    pkg = FIXTURES / "smoke_string_reward"
    _validates(pkg)
    rc, report = _smoke(pkg)
    assert rc == 1
    assert report["stage"] == "done"
    assert all(s["ready"] for s in report["servers"])  # it starts; it does not score
    (agent,) = report["agents"]
    assert agent["rewards"] == []
    assert [f["code"] for f in agent["failures"]] == ["EK702"]
    assert report["codes"] == ["EK702"]


def test_server_that_never_becomes_ready(monkeypatch) -> None:
    mark = new_mark(monkeypatch)
    pkg = FIXTURES / "smoke_never_ready"
    _validates(pkg)
    started = time.monotonic()
    rc, report = _smoke(pkg, "--timeout", "20")  # slow_warmup never is; a late other is tolerated
    assert rc == 1
    server = _failed_server(report, "slow_warmup")
    assert server["failure"]["code"] == "EK701"
    assert "EK701" in report["codes"]
    # the others are reported each on its own (on a loaded machine some may be late too)
    assert len(report["servers"]) == 4
    assert all(s["ready"] or s["failure"]["code"] for s in report["servers"])
    assert time.monotonic() - started < 1500
    assert survivors(mark) == []


def test_network_reached_at_spin_up_under_offline(tmp_path: Path) -> None:
    """Validates --offline (wheels cover everything), but the server downloads at start."""
    pkg = _built(FIXTURES / "smoke_network_offline" / "resources_servers" / "vocab_fetch",
                 tmp_path / "pkg")
    _validates(pkg, "--offline")
    rc, report = _smoke(pkg, "--offline")
    assert rc == 1
    server = _failed_server(report, "vocab_fetch")
    assert server["failure"]["code"] == "EK703"


@pytest.mark.own_ray  # SIGTERM while Gym's head starts its own Ray
def test_sigterm_during_bring_up_leaves_no_process(tmp_path: Path, monkeypatch) -> None:
    """SIGTERM while the servers come up: exit 130, nothing left running. (Ctrl-C there is
    ``tests/probe/test_probe_gym.py``'s interrupt test: the probe brings servers up with the
    same session, and the CLI turns SIGTERM into the same interrupt.)"""
    sig = signal.SIGTERM
    mark = new_mark(monkeypatch)
    pkg = make_native_package(tmp_path / "char-pattern")
    log = tmp_path / "stderr.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "envkit", "smoke", str(pkg)],
                                stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT,
                                env={**os.environ, **ENV, MARK: mark})
        try:
            deadline = time.monotonic() + 600
            while len(survivors(mark, wait_s=0)) < 4 and time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text()[-3000:]
                time.sleep(1)
            time.sleep(3)  # Gym, Ray and the first servers are starting
            proc.send_signal(sig)
            rc = proc.wait(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert rc == 130, log.read_text()[-3000:]
    assert survivors(mark) == [], log.read_text()[-3000:]


def test_converted_verifiers_package_passes(tmp_path: Path) -> None:
    """reverse-text through `envkit convert verifiers`, then smoke on its own rows (the
    scripted policy answers each row's `answer`)."""
    source = FIXTURES / "verifiers_envs" / "reverse-text"
    proc = _envkit("convert", "verifiers", "--hub-id", "envkit/reverse-text", "--source",
                   str(source), "--arch", "x86_64", "--out-dir", str(tmp_path / "pkg"),
                   "--dataset-dir", str(tmp_path / "data"), "--validation-fraction", "0",
                   "--env-args", json.dumps({"num_examples": 2, "seed": 11}), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pkg, data = tmp_path / "pkg", tmp_path / "data"
    _validates(pkg, "--dataset", str(data))
    rc, report = _smoke(pkg, "--dataset", str(data))
    assert rc == 0, report
    assert report["agents"] and all(a["ok"] and not a["synthetic_rows"]
                                    for a in report["agents"])
