"""A probe's outcome in every output format: JSON follows its schema, the findings become
GitHub annotations and SARIF results, the human tables name each policy and load level."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from support.paths import REPO_ROOT
from support.probe_fakes import JOB, WORDS, FakeLive, exact, make_ctx, make_row

from envkit.output import render
from envkit.probe import ProbeOutcome, ProbeReport
from envkit.probe.phases.load import LoadPhase
from envkit.probe.phases.reasoning import ReasoningPhase
from envkit.probe.phases.scoring import ScoringPhase
from envkit.probe.policies import panel
from envkit.probe.thresholds import Thresholds
from envkit.probe.write import write_outputs
from envkit.schemas import load_schema

PKG = REPO_ROOT / "fixtures" / "probe" / "breaks_under_load" / "pkg"


def _report() -> ProbeReport:
    ctx = make_ctx(FakeLive(exact, fails=lambda c: c > 2),
                   [make_row(i, w) for i, w in enumerate(WORDS)])
    ctx.results["scoring"] = ScoringPhase().run(ctx)
    ctx.results["load"] = LoadPhase().run(ctx)
    return ProbeReport(str(PKG), "done", job=JOB, thresholds=Thresholds(),
                       scale=ctx.scale, panel=tuple(panel()),
                       phases=tuple(ctx.results.values()), timings={"total_s": 1.0})


def test_json_follows_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert render.render(ProbeOutcome(_report(), PKG), "json") == 1
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, load_schema("probe"))
    assert data["codes"] == ["EK805"] and not data["passed"]
    (agent,) = data["agents"]
    assert agent["oracle"] == "oracle:bare"
    assert [lv["failed"] for lv in data["load"]["levels"]] == [0, 0, 12, 24]


def test_github_and_sarif(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = ProbeOutcome(_report(), PKG)
    render.render(outcome, "github")
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("::error file=") and "title=EK805" in line
    render.render(outcome, "sarif")
    sarif = json.loads(capsys.readouterr().out)
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "EK805" and result["level"] == "error"
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    assert rules[0]["shortDescription"]["text"].startswith("rollouts fail")


def test_human_tables(capsys: pytest.CaptureFixture[str]) -> None:
    render.render(ProbeOutcome(_report(), PKG), "human")
    out = capsys.readouterr().out
    assert "oracle:bare" in out and "skeleton:json" in out and "injection" in out
    assert "in flight" in out and "EK805" in out
    assert out.rstrip().splitlines()[-1].startswith("failed: probe (done)")


def test_output_dir_gets_json_and_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    report = write_outputs(_report(), tmp_path / "out")
    assert report.png == str(tmp_path / "out" / "probe.png")
    assert (tmp_path / "out" / "probe.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((tmp_path / "out" / "probe.json").read_text())
    assert saved["png"] == report.png


def test_no_matplotlib_skips_the_png_with_a_note(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    report = write_outputs(_report(), tmp_path)
    assert report.png is None and not (tmp_path / "probe.png").exists()
    assert any("matplotlib is not installed" in n for n in report.notes)
    assert json.loads((tmp_path / "probe.json").read_text())["notes"] == list(report.notes)


def _leaky_report() -> ProbeReport:
    """A verifier that finds the answer anywhere in the reply: EK812 from the reasoning phase."""
    def anywhere(reply: str, row: dict) -> float:
        return 1.0 if row["expected_answer"] in reply else 0.0

    ctx = make_ctx(FakeLive(anywhere), [make_row(i, w) for i, w in enumerate(WORDS)])
    ctx.results["scoring"] = ScoringPhase().run(ctx)
    ctx.results["reasoning"] = ReasoningPhase().run(ctx)
    return ProbeReport(str(PKG), "done", job=JOB, thresholds=Thresholds(),
                       scale=ctx.scale, panel=tuple(panel()),
                       phases=tuple(ctx.results.values()), timings={"total_s": 1.0})


def test_reasoning_in_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = ProbeOutcome(_leaky_report(), PKG)
    assert render.render(outcome, "json") == 1
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, load_schema("probe"))
    assert data["codes"] == ["EK812"]
    assert [p["name"] for p in data["policies"] if p["kind"] == "reasoning"] == [
        "reasoning:oracle", "reasoning:wrong-final", "reasoning:answer-only"]
    (agent,) = data["reasoning"]["agents"]
    assert [p["mean"] for p in agent["policies"]] == [1.0, 1.0, 1.0]
    render.render(outcome, "github")
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("::error file=") and "title=EK812" in line
    render.render(outcome, "sarif")
    (result,) = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert result["ruleId"] == "EK812" and result["level"] == "error"
    render.render(outcome, "human")
    out = capsys.readouterr().out
    assert "reasoning agent" in out and "answer-only 1.00" in out and "EK812" in out
