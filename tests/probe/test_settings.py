"""The probe's thresholds: defaults, ``[tool.envkit]`` keys, flags over the file, ranges,
and ``--show-settings``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.probe.thresholds import ThresholdError, Thresholds
from envkit.validate.settings import Settings, SettingsError, settings_for

SOUND = REPO_ROOT / "fixtures" / "probe" / "sound" / "pkg"


@pytest.fixture
def configured(tmp_path: Path) -> Path:
    pkg = tmp_path / "envs" / "sound"
    shutil.copytree(SOUND, pkg)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.envkit]\nprobe-margin = 0.25\nprobe-repeats = 3\nprobe-rows = 4\n"
        "probe-dead-rows-warn = 0.2\nprobe-concurrency = 1\nprobe-rollout-timeout = 90\n")
    return pkg


def test_defaults() -> None:
    th = Thresholds().over(Settings())
    assert (th.margin, th.repeats, th.rows, th.dead_rows_warn, th.concurrency,
            th.rollout_timeout_s) == (0.1, 2, 8, 0.5, 2, 600.0)


def test_file_then_flags(configured: Path) -> None:
    th = Thresholds().over(settings_for(configured, Settings(probe_repeats=5)))
    assert (th.margin, th.repeats, th.rows, th.dead_rows_warn, th.concurrency,
            th.rollout_timeout_s) == (0.25, 5, 4, 0.2, 1, 90.0)


def test_show_settings_lists_the_probe_keys(capsys: pytest.CaptureFixture[str],
                                           configured: Path) -> None:
    assert main(["validate", str(configured), "--show-settings",
                 "--output-format", "json"]) == 0
    (package,) = json.loads(capsys.readouterr().out)["packages"]
    values = package["settings"]
    assert values["probe-margin"] == 0.25 and values["probe-rows"] == 4
    assert values["probe-rollout-timeout"] == 90.0


@pytest.mark.parametrize(("text", "match"), [
    ('probe-repeats = "2"', "must be an integer"),
    ("probe-rows = 2.5", "must be an integer"),
    ("probe-margin = true", "must be a number"),
])
def test_wrong_types_are_settings_errors(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "envkit.toml").write_text(text + "\n")
    with pytest.raises(SettingsError, match=match):
        settings_for(tmp_path, Settings())


@pytest.mark.parametrize("settings", [
    Settings(probe_margin=1.5), Settings(probe_repeats=0), Settings(probe_dead_rows_warn=-0.1),
    Settings(probe_rollout_timeout=0.0),
])
def test_out_of_range_is_a_usage_error(settings: Settings) -> None:
    with pytest.raises(ThresholdError):
        Thresholds().over(settings)
