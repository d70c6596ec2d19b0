"""``envkit train`` writes ``provenance.json`` into its output once the inputs validate, before
anything runs (a run that fails later still says what it was given)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from envkit.cli import main
from envkit.schemas import load_schema
from envkit.supply.provenance import dataset_digest, package_record

pytest.importorskip("torch")

from toy_envs import char_pattern_rows, make_native_package, write_dataset


def test_train_writes_the_provenance_of_its_inputs(tmp_path: Path) -> None:
    pkg = make_native_package(tmp_path / "pkg")
    data = write_dataset(tmp_path / "data", char_pattern_rows(4))
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"model": "default/m", "dataset": "default/d",
                               "environment": "default/e", "training": {"type": "grpo"}}))
    out = tmp_path / "out"
    rc = main(["train", str(job), "--env", str(pkg), "--dataset", str(data), "--model",
               str(tmp_path), "-o", str(out)])
    assert rc == 1  # tmp_path holds no model: the run stops after the record is written
    record = json.loads((out / "provenance.json").read_text())
    Draft202012Validator(load_schema("provenance")).validate(record)
    assert record["package"]["sha256"] == package_record(pkg).package_sha256
    assert record["dataset"] == {"sha256": dataset_digest(data)}
    assert record["job"] == {"sha256": hashlib.sha256(job.read_bytes()).hexdigest()}
    assert "files" not in record["package"]
