"""``envkit probe`` and ``envkit validate --probe`` up to the bring-up: the rules explain
themselves, the schema ships, and what stops a probe before any server starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.schemas import load_schema
from envkit.validators import RULES
from envkit.validators.probe import RULES as PROBE_RULES

SOUND = REPO_ROOT / "fixtures" / "probe" / "sound"


@pytest.mark.parametrize("code", [r.code for r in PROBE_RULES])
def test_rule_explains_each_code(capsys: pytest.CaptureFixture[str], code: str) -> None:
    assert code in RULES
    assert main(["rule", code]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# ") and "## Why is this bad?" in out and "## How to fix" in out


def test_rule_prefix_lists_the_probe_family(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "EK8"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [
        r.code for r in PROBE_RULES]


def test_schema_ships(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "probe"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "envkit probe report"


def test_invalid_package_stops_before_the_bring_up(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(SOUND / "pkg", pkg)
    (pkg / "pyproject.toml").write_text("[project]\n")  # EK203
    rc = main(["probe", str(pkg), "--dataset", str(SOUND / "data"), "--output-format", "json"])
    assert rc == 1
    report = json.loads(capsys.readouterr().out)
    jsonschema.validate(report, load_schema("probe"))
    assert report["stage"] == "validate" and not report["passed"]
    assert [d["code"] for d in report["static"]["diagnostics"]] == ["EK203"]


def test_validate_probe_needs_a_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["validate", "--probe", str(SOUND / "pkg"), "--output-format", "json"])
    assert rc == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"]["kind"] == "usage"
    assert "--dataset" in captured.err


def test_bad_threshold_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["probe", str(SOUND / "pkg"), "--dataset", str(SOUND / "data"),
               "--margin", "2"])
    assert rc == 2
    assert "--margin" in capsys.readouterr().err
