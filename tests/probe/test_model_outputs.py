"""``envkit probe --model``'s outputs and edges: the ``signal`` section follows the schema (1.1),
the human table shows the shares with their interval, the threshold is a ``[tool.envkit]``
key shown by ``--show-settings``, and what stops ``--model`` before any server starts."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from support.paths import REPO_ROOT
from support.probe_serving import JOB, Phase, ServingLive, by_index, serving_ctx

from envkit.cli import main
from envkit.output import render
from envkit.policy_server.scripted import ScriptedBackend
from envkit.probe import PROBE_VERSION, ProbeOutcome, ProbeReport
from envkit.probe.thresholds import Thresholds
from envkit.schemas import load_schema
from envkit.validate.settings import Settings, settings_for

SOUND = REPO_ROOT / "fixtures" / "probe" / "sound"


def _report(tmp_path: Path, **job: object) -> ProbeReport:
    ctx = serving_ctx(ServingLive(by_index), job=replace(JOB, **job))
    ctx.results["signal"] = Phase(tmp_path, ScriptedBackend("zz")).run(ctx)
    return ProbeReport(str(SOUND / "pkg"), "done", job=ctx.job, thresholds=Thresholds(),
                       phases=tuple(ctx.results.values()), timings={"total_s": 1.0})


def test_json_follows_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _report(tmp_path, dynamic_sampling=True, max_gen_batches=2)
    assert render.render(ProbeOutcome(report, SOUND / "pkg"), "json") == 1
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, load_schema("probe"))
    assert data["version"] == PROBE_VERSION == "1.2"
    assert data["codes"] == ["EK810", "EK811"]
    signal = data["signal"]
    (agent,) = signal["agents"]
    assert (agent["groups"], agent["zero_variance_groups"], agent["samples"]) == (4, 3, 16)
    lo, hi = agent["zero_variance_interval"]
    assert lo < 0.75 < hi
    assert signal["total"]["zero_variance_share"] == 0.75
    assert signal["dynamic_sampling"] == {"expected_gen_batches": 4, "max_gen_batches": 2,
                                          "prompts_per_batch": 2}
    assert (signal["group_size"], signal["top_k"], signal["seed"]) == (4, 5, 7)
    assert data["phases"]["signal"] == {"rollouts": 16, "failed": 0}
    assert data["thresholds"]["zero_variance_warn"] == 0.5


def test_without_model_the_section_is_null(capsys: pytest.CaptureFixture[str]) -> None:
    report = ProbeReport(str(SOUND / "pkg"), "done", thresholds=Thresholds())
    render.render(ProbeOutcome(report, SOUND / "pkg"), "json")
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, load_schema("probe"))
    assert data["signal"] is None


def test_human_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    render.render(ProbeOutcome(_report(tmp_path, dynamic_sampling=True), SOUND / "pkg"),
                  "human")
    out = capsys.readouterr().out
    assert "learning signal" in out and "G=4 replies per prompt" in out
    header, row, total = [line for line in out.splitlines()
                          if line.strip().split(" ")[0] in ("agent", "all")]
    assert "zero-variance (95%)" in header and total.split()[:2] == ["all", "4"]
    assert "75% (" in row and "%)" in row
    assert "dynamic sampling: generation batches of 2 prompts: about 4 per step" in out
    assert "EK810" in out


def test_threshold_from_the_file_and_show_settings(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    pkg = tmp_path / "envs" / "sound"
    shutil.copytree(SOUND / "pkg", pkg)
    (tmp_path / "pyproject.toml").write_text("[tool.envkit]\nprobe-zero-variance-warn = 0.9\n")
    assert Thresholds().over(settings_for(pkg, Settings())).zero_variance_warn == 0.9
    assert main(["validate", str(pkg), "--show-settings", "--output-format", "json"]) == 0
    (package,) = json.loads(capsys.readouterr().out)["packages"]
    assert package["settings"]["probe-zero-variance-warn"] == 0.9


def test_threshold_out_of_range_is_a_usage_error(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pkg = tmp_path / "envs" / "sound"
    shutil.copytree(SOUND / "pkg", pkg)
    (tmp_path / "pyproject.toml").write_text("[tool.envkit]\nprobe-zero-variance-warn = 1.5\n")
    rc = main(["probe", str(pkg), "--dataset", str(SOUND / "data"), "--output-format", "json"])
    assert rc == 2
    assert "probe-zero-variance-warn must be in [0, 1]" in capsys.readouterr().err


def test_model_without_the_train_extra_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec("torch") is None: not installed
    rc = main(["probe", str(SOUND / "pkg"), "--dataset", str(SOUND / "data"),
               "--model", str(tmp_path), "--output-format", "json"])
    assert rc == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"]["kind"] == "missing-extra"
    assert "`envkit probe --model` needs the `train` extra (missing: torch)" in captured.err
    assert "pip install" in captured.err and "[train]" in captured.err


def test_model_dir_without_a_config_stops_first(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["probe", str(SOUND / "pkg"), "--dataset", str(SOUND / "data"),
               "--model", str(tmp_path), "--output-format", "json"])
    assert rc == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"]["kind"] == "usage"
    assert "no config.json" in captured.err
