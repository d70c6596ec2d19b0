"""The commands whose JSON needs real Gym servers, run as the user runs them (``python -m
envkit``, its own process): what ``envkit rollout`` and ``envkit train`` print validates against
``envkit schema rollout`` / ``train``. The fast tests render every result type; these show the
commands hand the renderer what it expects.

Slow: each brings a real Gym up (nemo-gym 0.7.0, the char_pattern toy package) and a tiny
random-init model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("torch")

from jsonschema import Draft202012Validator
from support.grpo_jobs import training, write_job
from support.proc_marks import new_mark, survivors
from toy_envs import char_pattern_rows, make_native_package, write_dataset

from envkit.schemas import load_schema
from envkit.trainer.tiny_model import make_tiny_model

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.train, pytest.mark.gym]


def _envkit(*args: object) -> dict:
    done = subprocess.run([sys.executable, "-m", "envkit", *map(str, args),
                           "--allow-python-override", "--output-format", "json"],
                          capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # stdout is the result only


def test_rollout_json_follows_its_schema(tmp_path: Path, monkeypatch) -> None:
    """Also the rollout command end to end: G samples a row, every row written with a float
    reward, the provenance beside them, no process left behind."""
    mark = new_mark(monkeypatch)
    model = make_tiny_model(tmp_path / "model", seed=0)
    package = make_native_package(tmp_path / "pkg", "char_pattern")
    data = write_dataset(tmp_path / "data", char_pattern_rows(2))
    out = tmp_path / "rollouts.jsonl"
    result = _envkit("rollout", package, "--dataset", data, "--model", model,
                     "--num-repeats", "2", "--max-tokens", "4", "-o", out)
    Draft202012Validator(load_schema("rollout")).validate(result)
    assert (result["rollouts"], result["failed"], result["output"]) == (4, 0, str(out))
    assert 0.0 <= result["mean_reward"]["char_pattern_simple_agent"] <= 1.0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and all(isinstance(r["reward"], float) for r in rows)
    record = json.loads((tmp_path / "provenance.json").read_text())  # next to the rollouts
    Draft202012Validator(load_schema("provenance")).validate(record)
    assert record["package"]["name"] and record["dataset"]["sha256"] and record["job"] is None
    assert survivors(mark) == []


def test_train_json_follows_its_schema(tmp_path: Path) -> None:
    model = make_tiny_model(tmp_path / "model", seed=0)
    package = make_native_package(tmp_path / "pkg", "char_pattern")
    data = write_dataset(tmp_path / "data", char_pattern_rows(4))
    job = write_job(tmp_path / "job.json", training(max_steps=1, epochs=1), model=model,
                    dataset=data, environment=package)
    result = _envkit("train", job, "-o", tmp_path / "out")
    Draft202012Validator(load_schema("train")).validate(result)
    assert result["steps"] == 1 and "train_reward" in result["final_metrics"]
    # the run records what `envkit rescore` needs: the package, every rollout with its response
    recorded = json.loads((tmp_path / "out" / "run.json").read_text())
    assert recorded["command"] == "train" and recorded["package"] == str(package.resolve())
    rows = [json.loads(line) for line in (tmp_path / "out" / "rollouts.jsonl").read_text()
            .splitlines()]
    assert len(rows) >= 4 and all("response" in r and "reward" in r for r in rows)
    rescored = _envkit("rescore", tmp_path / "out")
    Draft202012Validator(load_schema("rescore")).validate(rescored)
    assert rescored["summary"]["rescored"] == len(rows) and rescored["summary"]["changed"] == 0
