"""A training run that fails for a documented reason exits 1 with its message, never "internal
error": ``envkit train`` (the real CLI, in its own process) on a job whose dynamic sampling
cannot fill a batch, through the char_pattern toy package's real Gym servers.

The rows ask for an empty target character, which char_pattern scores 0.0 whatever the model
writes (``char_pattern_reward``): every group has the same reward, no sample has a spread, and
the second generation batch (``dynamic_sampling_max_gen_batches: 1``) ends the run.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from support.grpo_jobs import training, write_job
from toy_envs import char_pattern_rows, make_native_package, write_dataset

from envkit.schemas import load_schema
from envkit.trainer.tiny_model import make_tiny_model

pytestmark = [pytest.mark.train, pytest.mark.gym]


def test_dynamic_sampling_that_cannot_fill_a_batch_exits_1_with_its_message(tmp_path):
    from jsonschema import Draft202012Validator

    model = make_tiny_model(tmp_path / "model", seed=0)
    package = make_native_package(tmp_path / "pkg", "char_pattern")
    rows = [{**row, "target_char": ""} for row in char_pattern_rows(4)]
    data = write_dataset(tmp_path / "data", rows)
    block = training(use_dynamic_sampling=True, dynamic_sampling_max_gen_batches=1,
                     max_steps=1, epochs=1)
    job = write_job(tmp_path / "job.json", block, model=model, dataset=data,
                    environment=package)
    done = subprocess.run(
        [sys.executable, "-m", "envkit", "train", str(job), "--allow-python-override",
         "-o", str(tmp_path / "out"), "--output-format", "json"],
        capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    error = json.loads(done.stdout)
    Draft202012Validator(load_schema("error")).validate(error)
    assert error["error"]["kind"] == "failed"
    assert error["error"]["type"] == "DynamicSamplingError"
    assert error["error"]["message"].startswith("dynamic sampling kept 0 of 16 samples")
    assert f"error: {error['error']['message']}" in done.stderr
