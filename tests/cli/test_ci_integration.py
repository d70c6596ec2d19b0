"""The pre-commit hook and the documented CI step run real ``envkit validate`` commands."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest
import yaml
from support.paths import REPO_ROOT

from envkit.cli import main

ROOT = REPO_ROOT
VALID = ROOT / "fixtures" / "packages" / "valid-wheels-v1" / "pkg"


def _hooks() -> dict[str, dict]:
    return {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}


def test_pre_commit_hook_definition() -> None:
    hook = _hooks()["envkit-validate"]
    assert hook["id"] == "envkit-validate"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is True  # the touched files name the packages to validate
    assert hook["entry"] == "envkit validate --ignore-unowned-files"
    assert not hook.get("always_run")


def test_pre_commit_entry_runs(capsys: pytest.CaptureFixture[str]) -> None:
    hook = _hooks()["envkit-validate"]
    argv = [*shlex.split(hook["entry"])[1:], str(VALID / "nemo-environment.yaml")]
    assert main(argv) == 0, capsys.readouterr()


def test_documented_github_steps_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The steps as written, at the root of a workspace configured as the document shows."""
    doc = (ROOT / "docs" / "ci.md").read_text()
    commands = re.findall(r"run: (envkit validate --output-format (\w+) --offline)", doc)
    assert {fmt for _, fmt in commands} == {"github", "sarif", "json"}
    config = next(block for block in re.findall(r"```toml\n(.*?)```", doc, re.DOTALL)
                  if "packages =" in block)
    members = tomllib.loads(config)["tool"]["envkit"]["packages"]
    offline_clean = ROOT / "fixtures" / "packages" / "valid-wheels-v1-offline" / "pkg"
    for member in members:
        shutil.copytree(offline_clean, tmp_path / member.replace("*", "math"))
    (tmp_path / "pyproject.toml").write_text(config)
    monkeypatch.chdir(tmp_path)
    for command, fmt in commands:
        rc = main(shlex.split(command)[1:])
        out, err = capsys.readouterr()
        assert rc == 0 and "Traceback" not in err, out + err
        if fmt == "github":
            assert all(line.startswith(("::error ", "::warning ")) for line in out.splitlines())
        else:
            assert "envs/math" in json.dumps(json.loads(out))  # the members were checked


def test_documented_install_lines_name_the_distribution() -> None:
    name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    for doc in (ROOT / "docs" / "ci.md", ROOT / "README.md"):
        lines = re.findall(r"pip install (?!-e)['\"]?([A-Za-z][\w./-]*)", doc.read_text())
        wheel = name.replace("-", "_") + "-"  # a built wheel's file names the distribution too
        assert lines and all(n == name or (n.endswith(".whl") and n.rsplit("/", 1)[-1]
                                           .startswith(wheel)) for n in lines), (doc.name, lines)


def _command_help(capsys: pytest.CaptureFixture[str], words: list[str]) -> tuple[str, str]:
    """The longest command path ``words`` start with (``job logs``), and its ``--help``."""
    path: list[str] = []
    main(["--help"])
    text = capsys.readouterr().out
    for word in words:
        listed = re.search(r"^Commands:\n(.*)", text, re.DOTALL | re.MULTILINE)
        if listed is None or not re.search(rf"^  {re.escape(word)}\b", listed[1], re.MULTILINE):
            break
        path.append(word)
        main([*path, "--help"])
        text = capsys.readouterr().out
    return " ".join(path), text


def test_readme_commands_use_only_flags_their_help_shows(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """The README once showed ``--out-dir`` where ``--help`` shows only ``-o/--output``."""
    shell = "\n".join(re.findall(r"```(?:bash|sh)\n(.*?)```", (ROOT / "README.md").read_text(),
                                 re.DOTALL)).replace("\\\n", " ")
    unknown = []
    for line in shell.splitlines():
        words = line.split(" #")[0].split()
        if words[:1] != ["envkit"]:
            continue
        command, text = _command_help(capsys, words[1:])
        assert command, line
        unknown += [(command, flag) for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", line)
                    if not re.search(rf"(?<![\w-]){flag}\b", text)]
    assert not unknown


_INTERNAL = re.compile(r"seed \d{3}|\bSPEC\b|§|issue #\d")


def test_user_facing_text_cites_no_internal_notes(capsys: pytest.CaptureFixture[str]) -> None:
    from envkit.cli.app import COMMANDS

    texts = {"README.md": (ROOT / "README.md").read_text(),
             "docs/ci.md": (ROOT / "docs" / "ci.md").read_text()}
    for command in (*COMMANDS, "convert verifiers", "convert package"):
        main([*command.split(), "--help"])
        texts[f"envkit {command} --help"] = capsys.readouterr().out
    main(["rule", "--all", "--output-format", "json"])
    texts["envkit rule"] = capsys.readouterr().out
    found = {where: _INTERNAL.findall(text) for where, text in texts.items()}
    assert not {k: v for k, v in found.items() if v}
