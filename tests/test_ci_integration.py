"""The pre-commit hook and the documented CI step run real ``envkit validate`` commands."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from envkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "fixtures" / "packages" / "valid-wheels-v1" / "pkg"


def _hooks() -> dict[str, dict]:
    return {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}


def test_pre_commit_hook_definition() -> None:
    hook = _hooks()["envkit-validate"]
    assert hook["id"] == "envkit-validate"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False
    assert hook["entry"] == "envkit validate"
    assert hook["args"]


def test_pre_commit_entry_runs(capsys: pytest.CaptureFixture[str]) -> None:
    hook = _hooks()["envkit-validate"]
    argv = [*shlex.split(hook["entry"])[1:], str(VALID)]
    assert main(argv) == 0, capsys.readouterr()


def test_documented_github_step_runs(capsys: pytest.CaptureFixture[str]) -> None:
    doc = (ROOT / "docs" / "ci.md").read_text()
    (command,) = re.findall(r"run: (envkit validate pkg/ --format github --offline)$", doc, re.M)
    argv = shlex.split(command)[1:]
    argv[argv.index("pkg/")] = str(VALID)
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc in (0, 1) and "Traceback" not in err
    assert all(line.startswith(("::error ", "::warning ")) for line in out.splitlines())
