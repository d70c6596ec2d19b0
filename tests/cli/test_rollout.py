"""`envkit rollout` usage errors (exit 2, the rule named), before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("psutil")  # the `train` extra

from toy_envs import make_native_package

from envkit.cli import main


def test_cli_rollout_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pkg = make_native_package(tmp_path / "p")
    assert main(["rollout", str(pkg), "--model", str(tmp_path)]) == 2  # --dataset missing
    empty = tmp_path / "empty"
    empty.mkdir()
    rc = main(["rollout", str(pkg), "--dataset", str(empty), "--model", str(tmp_path)])
    assert rc == 2
    assert "EK500" in capsys.readouterr().err
