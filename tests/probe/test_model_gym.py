"""``envkit probe --model`` predicts the zero-variance groups ``envkit train`` then sees.

The bundled tiny model (random init, ``envkit.trainer.tiny_model``) on the char_pattern toy
package, one small job: the probe samples G replies for each of its first ``PROBE_PROMPTS``
prompts through the package's real Gym servers (nemo-gym 0.7.0) and its own policy endpoint,
serving the model on the HF engine; ``envkit train`` (its own process, as the user runs it)
trains ``STEPS`` steps of ``PROMPTS_PER_STEP`` groups on the same job and logs
``train_zero_variance_share`` per step.

Why the shares can be compared: every prompt is the same ("write a 8 times", ``chars="a"``),
so each group, in the probe or in a step, is G draws from the starting policy; the job's
learning rate is small enough (flat 1e-5, three Adam steps) that the policy the first steps
sample from is the starting one. The probe's draws are seeded apart from the job's
(``PROBE_SALT``), so the two counts are independent binomials with one share p.

The tolerance is sampling error: with z1 of n1 probe groups and z2 of n2 training groups
zero-variance, the pooled share p = (z1 + z2) / (n1 + n2) gives the difference of the two
shares a standard deviation sqrt(p (1 - p) (1/n1 + 1/n2)); the test allows three of them (a
false alarm under equal shares has probability 0.27%). Both runs are seeded (the job's
``seed``; the probe's seeds derive from it), so the verdict is the same on every run. The
shares must also lie well inside (0, 1), so agreement is not the trivial kind (all groups
dead in both, or none).

Slow: two real Gym bring-ups (Python 3.13 venvs, cached) and about 640 rollouts of a tiny
model on the CPU. The Python 3.13.0 on this machine is below nemo-gym's ``Requires-Python``,
hence ``allow_python_override``.
"""

from __future__ import annotations

import math
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("torch")

from support.grpo_jobs import training, write_job
from toy_envs import char_pattern_rows, make_native_package, write_dataset

from envkit.probe import ProbeRequest, run_probe
from envkit.probe.phases.model import ModelPhase, SignalResult
from envkit.trainer.metrics import read_metrics
from envkit.trainer.tiny_model import make_tiny_model
from envkit.validate.settings import Settings

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.gym, pytest.mark.train]

G = 8
PROMPTS_PER_STEP = 16
STEPS = 3
PROBE_PROMPTS = 32
Z = 3.0


def _job_block() -> dict:
    return training(num_generations_per_prompt=G, batch_size=G * PROMPTS_PER_STEP,
                    micro_batch_size=G * PROMPTS_PER_STEP, max_new_tokens=8, temperature=1.0,
                    optimizer_type="adamw_with_flat_lr", learning_rate=1e-5,
                    max_steps=STEPS, epochs=1, seed=3)


def test_probe_predicts_the_zero_variance_share_train_sees(tmp_path: Path) -> None:
    model = make_tiny_model(tmp_path / "model", seed=0)
    package = make_native_package(tmp_path / "pkg", "char_pattern")
    rows = max(PROBE_PROMPTS, STEPS * PROMPTS_PER_STEP)  # the probe reads the first 32
    data = write_dataset(tmp_path / "data", char_pattern_rows(rows, chars="a"))
    # the probe reads the job's `training` block; its refs are the platform's (validated as such)
    probe_job = write_job(tmp_path / "probe-job.json", _job_block(),
                          model="default/tiny-char-model", dataset="default/char-pattern-data",
                          environment="default/char-pattern")
    train_job = write_job(tmp_path / "train-job.json", _job_block(), model=model, dataset=data,
                          environment=package)

    report = run_probe(ProbeRequest(package, flags=Settings(dataset=data, job=probe_job,
                                                            probe_rows=PROBE_PROMPTS),
                                    allow_python_override=True, model=model),
                       phases=(ModelPhase(model),))
    assert report.stage == "done", report.failure
    signal = report.phase("signal")
    assert isinstance(signal, SignalResult)
    (agent,) = signal.agents
    assert (agent.rollouts, agent.failed) == (PROBE_PROMPTS * G, 0)
    z1, n1 = agent.signal.zero_variance, agent.signal.groups

    done = subprocess.run([sys.executable, "-m", "envkit", "train", str(train_job), "-o",
                           str(tmp_path / "out"), "--allow-python-override"],
                          capture_output=True, text=True, timeout=1500, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    steps = read_metrics(tmp_path / "out" / "metrics.jsonl")
    assert [s["step"] for s in steps] == list(range(1, STEPS + 1))
    assert all(s["train_failed_rollouts"] == 0 for s in steps)
    z2 = sum(round(s["train_zero_variance_share"] * PROMPTS_PER_STEP) for s in steps)
    n2 = STEPS * PROMPTS_PER_STEP

    p1, p2, pooled = z1 / n1, z2 / n2, (z1 + z2) / (n1 + n2)
    tolerance = Z * math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    print(f"zero-variance groups: probe {z1}/{n1}, train {z2}/{n2}, tolerance {tolerance:.3f}")
    assert 0.15 < pooled < 0.85, (z1, n1, z2, n2)
    assert abs(p1 - p2) <= tolerance, (f"probe {z1}/{n1}, train {z2}/{n2}: "
                                       f"|{p1:.3f} - {p2:.3f}| > {tolerance:.3f}")
