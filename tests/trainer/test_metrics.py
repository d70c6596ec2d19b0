"""A metrics line torn by a kill mid-write must not stop ``--resume``."""

from __future__ import annotations

import json

import pytest

from envkit.trainer.metrics import read_metrics


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_torn_last_line_is_dropped(tmp_path):
    path = tmp_path / "metrics.jsonl"
    _write(path, json.dumps({"step": 1}) + "\n" + '{"step": 2, "train_lo')
    assert read_metrics(path) == [{"step": 1}]


def test_a_corrupt_middle_line_still_raises(tmp_path):
    path = tmp_path / "metrics.jsonl"
    _write(path, '{"step": 1\n' + json.dumps({"step": 2}) + "\n")
    with pytest.raises(json.JSONDecodeError):
        read_metrics(path)
