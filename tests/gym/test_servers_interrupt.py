"""Ctrl-C during `envkit rollout` tears every Gym server down (issue #5: no orphans).

Slow: a real bring-up (nemo-gym 0.7.0 venvs, Ray, the char_pattern resources server), then
SIGINT to the CLI while rollouts are in flight.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pytest

pytest.importorskip("torch")

from toy_envs import char_pattern_rows, make_native_package, write_dataset

from envkit.trainer.tiny_model import make_tiny_model

pytestmark = [pytest.mark.gym, pytest.mark.own_ray]  # Ctrl-C with Gym's own Ray in the tree


def _tagged(tag: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(
                    "ENVKIT_TEST_TAG") == tag:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_ctrl_c_mid_run_exits_130_and_leaves_no_process(tmp_path: Path) -> None:
    """...and nothing in the temporary directory: servers killed by the tear-down run no
    clean-up of their own (each Gym server's wandb import makes two directories there)."""
    scratch = Path(tempfile.mkdtemp(prefix="ek-"))  # short: Ray's socket paths live below it
    model = make_tiny_model(tmp_path / "model")
    pkg = make_native_package(tmp_path / "pkg")
    data = write_dataset(tmp_path / "data", char_pattern_rows(64))
    tag = uuid.uuid4().hex
    log = tmp_path / "stderr.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "envkit", "rollout", str(pkg), "--dataset", str(data),
             "--model", str(model), "--num-repeats", "4", "--max-tokens", "48",
             "--allow-python-override", "-o", str(tmp_path / "rollouts.jsonl")],
            stdout=subprocess.DEVNULL, stderr=err,
            env={**os.environ, "ENVKIT_TEST_TAG": tag, "TMPDIR": str(scratch)})
        try:
            deadline = time.monotonic() + 900
            while "servers ready" not in log.read_text() and time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text()[-3000:]
                time.sleep(1)
            assert "servers ready" in log.read_text(), log.read_text()[-3000:]
            time.sleep(2)  # rollouts in flight
            assert len(_tagged(tag)) > 1, "the Gym servers should be running now"
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
    leftovers = _tagged(tag)
    for p in leftovers:  # never leave them behind for the next test
        p.kill()
    assert leftovers == [], log.read_text()[-3000:]
    assert rc == 130, log.read_text()[-3000:]
    left = sorted(p.name for p in scratch.iterdir())
    shutil.rmtree(scratch, ignore_errors=True)
    assert left == [], left
