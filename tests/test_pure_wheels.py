"""Building sdist-only pure-Python projects into wheels (fast: pip is recorded, not run)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from envkit.converters import pure_wheels
from envkit.converters.pure_wheels import PureWheelError, build_pure_wheels

SPEC = ("antlr4-python3-runtime==4.9.3",)


def _fake_pip(returncode: int, built: str | None, calls: list[list[str]]):
    def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        assert kwargs["env"]["PIP_CONFIG_FILE"]  # type: ignore[index]
        if built:
            (Path(cmd[cmd.index("-w") + 1]) / built).write_bytes(b"")
        return subprocess.CompletedProcess(cmd, returncode, "", "boom")
    return run


def test_a_cached_wheel_is_not_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "antlr4_python3_runtime-4.9.3-py3-none-any.whl").write_bytes(b"")
    calls: list[list[str]] = []
    monkeypatch.setattr(pure_wheels.subprocess, "run", _fake_pip(0, None, calls))
    assert build_pure_wheels(tmp_path, SPEC) == tmp_path and calls == []


def test_pip_runs_without_this_machines_config(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setenv("PIP_INDEX_URL", "http://elsewhere/simple")
    monkeypatch.setattr(pure_wheels.subprocess, "run",
                        _fake_pip(0, "antlr4_python3_runtime-4.9.3-py3-none-any.whl", calls))
    build_pure_wheels(tmp_path, SPEC)
    assert calls[0][-1] == SPEC[0] and "--no-deps" in calls[0]
    assert "PIP_INDEX_URL" not in pure_wheels._pip_env()


@pytest.mark.parametrize(("rc", "built", "match"), [
    (1, None, "failed: boom"),
    (0, "antlr4_python3_runtime-4.9.3-cp313-cp313-linux_x86_64.whl", "pure-Python"),
])
def test_a_failed_or_platform_build_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                rc: int, built: str | None, match: str) -> None:
    monkeypatch.setattr(pure_wheels.subprocess, "run", _fake_pip(rc, built, []))
    with pytest.raises(PureWheelError, match=match):
        build_pure_wheels(tmp_path, SPEC)
