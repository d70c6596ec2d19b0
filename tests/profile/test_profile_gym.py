"""``envkit profile --keep`` on the demo job writes a dataset that teaches more, and
``envkit train`` runs on it.

The demo's inputs: its job (``examples/tiny_grpo.json``: G = 8, 8 new tokens, temperature 1),
the char_pattern package (native-v1 from the same tree ``scripts/demo.sh`` builds) and the
bundled tiny model (random init, ``envkit.trainer.tiny_model``), served on the HF engine behind
the package's real Gym servers (nemo-gym 0.7.0).

The dataset: the demo's 16 rows ("write a 8 times") and 32 rows that ask for a character the
tiny model's tokenizer cannot write ("é"): every reply to those scores 0, a group with no
gradient, as a task beyond the policy gives. A reply passes at reward >= 0.1 (one hit of eight
characters); ``--keep 0.1,0.9`` keeps the rows where some but not all of the G replies passed.

Why the curated dataset's share must come out lower, measured on a second profile of the
curated rows (their groups sit at other places, so they draw other seeds): an "a" group is
zero-variance with some p (about 0.6 for this model: every reply misses), an "é" group always,
so the original's share is about (16 p + 32) / 48 ~ 0.87 and the curated one's, all "a" rows,
about p. The gap is about 1.5 standard deviations of the curated share's sampling error; both
runs are seeded (the job's ``seed``), so the verdict is the same on every run (measured on this
machine: 41 of 48 groups, then 5 of 7). The second profile also shows that two runs give the
same profile: its rows are the same prompt at the same places as the original's first ones.

The training run is also ``envkit train`` end to end as the user runs it (its own process): its
JSON follows ``envkit schema train``, and the run records what ``envkit rescore`` needs, which
rescores its rollouts unchanged.

Slow: four real Gym bring-ups (Python 3.13 venvs, cached), ~450 rollouts of a tiny model on
the CPU and two GRPO steps; ``allow_python_override`` because this machine's Python 3.13.0 is
below nemo-gym's ``Requires-Python``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import jsonschema
import pytest

pytest.importorskip("torch")

from support.grpo_jobs import write_job
from support.paths import REPO_ROOT
from toy_envs import char_pattern_rows, make_native_package, write_dataset

from envkit.cli import main
from envkit.model.provenance import read_provenance
from envkit.schemas import load_schema
from envkit.trainer.metrics import read_metrics
from envkit.trainer.tiny_model import make_tiny_model

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.gym, pytest.mark.train]

JOB = REPO_ROOT / "examples" / "tiny_grpo.json"
EASY, HARD = 16, 32


def _profile(capsys: pytest.CaptureFixture[str], package: Path, dataset: Path, model: Path,
             out: Path, *extra: str) -> dict:
    rc = main(["profile", str(package), "--dataset", str(dataset), "--model", str(model),
               "--job", str(JOB), "-o", str(out), "--pass-threshold", "0.1",
               "--allow-python-override", "--output-format", "json", *extra])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0, data
    return data


def _envkit_json(*args: object) -> dict:
    """``envkit ARGS --output-format json`` in its own process, as the user runs it: its result
    (stdout holds only the JSON)."""
    done = subprocess.run([sys.executable, "-m", "envkit", *map(str, args),
                           "--allow-python-override", "--output-format", "json"],
                          capture_output=True, text=True, timeout=1500, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_keep_lowers_the_zero_variance_share_and_train_runs_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = make_tiny_model(tmp_path / "model", seed=0)
    package = make_native_package(tmp_path / "pkg", "char_pattern")
    rows = char_pattern_rows(EASY, chars="a") + char_pattern_rows(HARD, chars="é")
    data = write_dataset(tmp_path / "data", rows)
    G = json.loads(JOB.read_text())["training"]["num_generations_per_prompt"]

    first = _profile(capsys, package, data, model, tmp_path / "prof", "--keep", "0.1,0.9")
    assert (first["rows_profiled"], first["rollouts"], first["failed"]) == (48, 48 * G, 0)
    assert first["job"]["group_size"] == G
    lines = [json.loads(x) for x in (tmp_path / "prof" / "profile.jsonl").read_text().splitlines()]
    assert [r["index"] for r in lines] == list(range(48))
    assert all(r["pass_rate"] == 0.0 for r in lines[EASY:])  # nobody writes "é"
    kept = first["keep"]["rows"]["training"]["kept"]
    assert 0 < kept < EASY, first["keep"]
    assert first["keep"]["zero_variance_share_after"] == 0.0  # in band: some passed, some not

    curated = tmp_path / "prof" / "dataset"
    assert first["keep"]["dataset"] == str(curated)
    kept_rows = [json.loads(x) for x in (curated / "training.jsonl").read_text().splitlines()]
    assert [r for r in rows if r in kept_rows] == kept_rows  # in order, none made up
    assert all(r["target_char"] == "a" for r in kept_rows) and len(kept_rows) == kept
    doc = read_provenance(curated / "provenance.json")
    assert doc.record is not None and doc.record.curation is not None
    assert doc.record.curation["band"] == [0.1, 0.9]
    assert doc.record.curation["rows"] == {"training": {"profiled": 48, "kept": kept}}
    assert doc.record.curation["group_size"] == G

    second = _profile(capsys, package, curated, model, tmp_path / "prof2")
    before, after = first["zero_variance_share"], second["zero_variance_share"]
    print(f"zero-variance share at G={G}: original {before} ({48} rows), "
          f"curated {after} ({kept} rows)")
    assert after < before
    # two runs, the same requests, the same replies: the curated rows (all "a") sit at the
    # places 0..kept-1, so each draws the seeds the original's row there drew, for one prompt
    assert [r["rewards"] for r in second["rows"]] == [r["rewards"] for r in first["rows"][:kept]]

    job = write_job(tmp_path / "job.json", {**json.loads(JOB.read_text())["training"],
                                             "max_steps": 2},
                    model=model, dataset=curated, environment=package)
    run = tmp_path / "run"
    result = _envkit_json("train", job, "-o", run)
    jsonschema.validate(result, load_schema("train"))
    assert result["steps"] == 2 and "train_reward" in result["final_metrics"]
    steps = read_metrics(run / "metrics.jsonl")
    assert [s["step"] for s in steps] == [1, 2]
    assert all(s["train_failed_rollouts"] == 0 for s in steps)
    # the run records what `envkit rescore` needs: the package, every rollout with its response
    recorded = json.loads((run / "run.json").read_text())
    assert recorded["command"] == "train" and recorded["package"] == str(package.resolve())
    rows = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    assert len(rows) >= 2 * G and all("response" in r and "reward" in r for r in rows)
    rescored = _envkit_json("rescore", run)
    jsonschema.validate(rescored, load_schema("rescore"))
    assert rescored["summary"]["rescored"] == len(rows) and rescored["summary"]["changed"] == 0
