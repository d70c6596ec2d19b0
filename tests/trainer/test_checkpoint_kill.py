"""Resume after a real SIGKILL: the killed process leaves only whole checkpoints, and the
resumed run reaches the same loss, reward and learning rate as an uninterrupted one.

Why a subprocess: ``test_grpo.py``'s resume test stops in-process between steps; a kill can
land anywhere (mid-step, mid-save, mid-metrics-line), which only a real process shows.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from support.paths import SUPPORT  # noqa: E402

from envkit.trainer.checkpoint import latest_checkpoint  # noqa: E402
from envkit.trainer.metrics import read_metrics  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402

pytestmark = pytest.mark.train

DRIVER = SUPPORT / "kill_resume_driver.py"
K = 2  # kill as soon as this step's checkpoint exists
TIMEOUT_S = 120


def _driver(model: Path, out: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, str(DRIVER), str(model), str(out), *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _finish(proc: subprocess.Popen) -> None:
    out, _ = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0, out.decode(errors="replace")[-3000:]


def _kill_at_checkpoint(proc: subprocess.Popen, ckpt_meta: Path) -> None:
    """Poll for the step-K checkpoint and SIGKILL the process the moment it appears."""
    deadline = time.monotonic() + TIMEOUT_S
    while not ckpt_meta.exists():
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            pytest.fail(f"driver exited ({proc.returncode}) before step {K}: {out[-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no checkpoint for step {K} within {TIMEOUT_S}s")
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == -signal.SIGKILL  # killed, not finished


def _assert_whole_checkpoints(root: Path) -> int:
    """Every ``step_*`` dir is complete and loadable; temp dirs are never picked."""
    for path in root.iterdir():
        if path.name.startswith("."):
            continue  # a save the kill interrupted: resume must ignore it
        assert (path / "meta.json").is_file(), path
        assert (path / "policy" / "model.safetensors").is_file(), path
        torch.load(path / "trainer_state.pt", weights_only=False)
    latest = latest_checkpoint(root)
    assert latest is not None
    assert not latest.path.name.startswith(".")
    assert latest.step >= K
    return latest.step


def test_resume_after_sigkill_matches_an_uninterrupted_run(tmp_path):
    model = make_tiny_model(tmp_path / "model", seed=0)
    target = K + 2
    full = _driver(model, tmp_path / "full", "--stop-after", str(target))
    _finish(full)

    cut = tmp_path / "cut"
    killed = _driver(model, cut)
    _kill_at_checkpoint(killed, cut / "checkpoints" / f"step_{K:06d}" / "meta.json")
    assert not (cut / "final").exists()
    resumed_from = _assert_whole_checkpoints(cut / "checkpoints")
    assert resumed_from < target, "the kill came too late to test resume"

    resumed = _driver(model, cut, "--resume", "--stop-after", str(target))
    _finish(resumed)

    a = read_metrics(tmp_path / "full" / "metrics.jsonl")
    b = read_metrics(cut / "metrics.jsonl")
    assert [r["step"] for r in a] == list(range(1, target + 1))
    assert [r["step"] for r in b] == list(range(1, target + 1))  # killed run's extras dropped
    for name in ("train_loss", "train_reward", "train_lr"):
        want = [r[name] for r in a[resumed_from:]]
        got = [r[name] for r in b[resumed_from:]]
        assert got == pytest.approx(want, rel=1e-5, abs=1e-7), name
