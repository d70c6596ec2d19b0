"""The CLI's one result, exit and error path: every command's result rendered by
``envkit.output.render``, every exception mapped to an exit code by its own kind, JSON errors on
stdout."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from jsonschema import Draft202012Validator
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.cli.app import classify
from envkit.errors import KIND_EXITS, FailedError, UsageError
from envkit.schemas import SCHEMAS, load_schema

ROOT = REPO_ROOT
VALID = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"


def _run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_shipped_schema_is_a_valid_json_schema(name: str) -> None:
    Draft202012Validator.check_schema(load_schema(name))


def test_usage_error_with_json_output_is_a_json_error_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    other = ROOT / "fixtures" / "packages" / "valid-wheels-v1" / "pkg"
    rc, out, err = _run(capsys, "validate", VALID, other, "--dataset", VALID,  # one dataset, two
                        "--output-format", "json")
    assert rc == 2
    error = json.loads(out)
    Draft202012Validator(load_schema("error")).validate(error)
    assert error["error"]["kind"] == "usage" and "belong to one package" in (
        error["error"]["message"])
    assert "Traceback" not in err


def test_parse_error_with_json_output_is_a_json_error_object(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, out, _ = _run(capsys, "validate", tmp_path / "nope", "--format", "json")
    assert rc == 2
    Draft202012Validator(load_schema("error")).validate(json.loads(out))


def test_usage_error_in_human_output_keeps_stdout_empty(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = _run(capsys, "validate", VALID, "--arch", "sparc")
    assert rc == 2 and not out and "sparc" in err


def test_classify_reads_the_kind_of_the_exception() -> None:
    class SubUsage(click.UsageError):
        pass

    class Refused(FailedError):
        pass

    class BadFlag(UsageError, ValueError):
        pass

    assert classify(SubUsage("x")) == (2, "usage")
    assert classify(FileNotFoundError("x")) == (2, "usage")
    assert classify(NotADirectoryError("x")) == (2, "usage")
    assert classify(Refused("x")) == (1, "failed")
    assert classify(BadFlag("x")) == (2, "usage")
    assert classify(KeyError("x")) == (2, "internal")
    assert classify(ValueError("x")) == (2, "internal")  # a builtin base alone is not documented
    assert all(code in (1, 2) for code in KIND_EXITS.values())


def test_internal_error_asks_for_a_report(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import envkit.validate.gate

    def boom(request: object) -> None:
        raise KeyError("bug")

    monkeypatch.setattr(envkit.validate.gate, "run_gate", boom)
    rc, out, err = _run(capsys, "validate", VALID, "--output-format", "json")
    assert rc == 2 and "internal error" in err and "Please report" in err
    assert json.loads(out)["error"]["kind"] == "internal"


CASES = ROOT / "fixtures" / "packages"
INVALID = CASES / "EK102-unknown-top-level-key" / "pkg"


@pytest.mark.parametrize(("args", "schema", "code"), [
    (["rule", "--all", "--output-format", "json"], "rules", 0),
    (["rule", "EK1", "--output-format", "json"], "rules", 0),
    (["validate", str(VALID), "--show-settings", "--output-format", "json"], "settings", 0),
    (["validate", str(VALID), "--output-format", "json"], "diagnostics", 0),
    (["validate", str(INVALID), "--output-format", "json"], "diagnostics", 1),
    (["smoke", str(INVALID), "--output-format", "json"], "smoke", 1),  # stops at validate
    (["train", str(CASES / "valid-job-grpo-lora" / "job.json"), "--print-config",
      "--dataset", str(CASES / "valid-dataset" / "data"), "--output-format", "json"],
     "train-config", 0),
    (["validate", str(VALID), "--arch", "sparc", "--output-format", "json"], "error", 2),
])
def test_json_outputs_follow_their_schemas(
    capsys: pytest.CaptureFixture[str], args: list[str], schema: str, code: int
) -> None:
    rc, out, err = _run(capsys, *args)
    assert rc == code, err
    Draft202012Validator(load_schema(schema)).validate(json.loads(out))


def test_build_json_follows_its_schema(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """native-v1 runs no resolver: the command end to end, offline, in a second."""
    from gymtree_factory import make_gym_tree

    server = make_gym_tree(tmp_path / "gym", "echo")
    rc, out, err = _run(capsys, "build", server, "--format", "native-v1", "-o", tmp_path / "pkg")
    assert rc == 0, err
    data = json.loads(out)
    Draft202012Validator(load_schema("diagnostics")).validate(data)
    assert data["packages"][0]["path"] == str(tmp_path / "pkg")  # the report, built whole


def test_every_option_has_help() -> None:
    from envkit.cli.app import COMMANDS, cli

    ctx = click.Context(cli)
    missing = []
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        commands = (list(command.commands.values()) if isinstance(command, click.Group)
                    else [command])
        for cmd in commands:
            missing += [f"{name} {cmd.name} {p.opts}" for p in cmd.params
                        if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert not missing


@pytest.mark.parametrize("command", ["validate", "build", "rollout", "train", "rule"])
def test_quiet_and_verbose_everywhere(capsys: pytest.CaptureFixture[str], command: str) -> None:
    rc, out, _ = _run(capsys, command, "--help")
    assert rc == 0 and "-q, --quiet" in out and "-v, --verbose" in out


def test_old_output_spellings_still_parse_but_are_hidden(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = _run(capsys, "build", "--help")
    assert "-o, --output" in out and "--out " not in out
    _, out, _ = _run(capsys, "convert", "verifiers", "--help")
    assert "-o, --output" in out and "--out-dir" not in out
    _, out, _ = _run(capsys, "validate", "--help")
    assert "--output-format" in out and "--format" not in out


def test_validate_writes_its_report_to_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "report.sarif"
    rc, out, _ = _run(capsys, "validate", VALID, "--output-format", "sarif", "-o", report)
    assert rc == 0 and not out
    assert json.loads(report.read_text())["version"] == "2.1.0"


def _schema_check(capsys: pytest.CaptureFixture[str], result: object, schema: str) -> dict:
    from envkit.output import render

    render.render(result, "json")
    data = json.loads(capsys.readouterr().out)
    Draft202012Validator(load_schema(schema)).validate(data)
    return data


def test_rollout_and_train_json_follow_their_schemas(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The renderer's side of the contract; the slow rollout/train tests run the real thing."""
    from dataclasses import dataclass, field

    from envkit.output.results import RolloutOutcome, TrainOutcome

    @dataclass(frozen=True)
    class Summary:  # the fields the rollout renderer reads, nothing else
        results: tuple = ()
        failed: tuple = ()
        mean_reward: dict = field(default_factory=lambda: {"agent": 0.5})
        ready_s: float = 1.0
        rollout_s: float = 2.0
        exit_code: int = 0

        def to_json(self) -> dict:
            return {"version": "1.0", "rollouts": 2, "failed": 0, "mean_reward": self.mean_reward,
                    "truncation_rate": 0.0, "ready_s": 1.0, "rollout_s": 2.0, "failures": []}

    @dataclass(frozen=True)
    class Trained:
        steps: int = 3
        final_dir: Path = tmp_path / "final"
        metrics_path: Path = tmp_path / "metrics.jsonl"
        final_metrics: dict = field(default_factory=lambda: {"train_reward": 0.25})

    data = _schema_check(capsys, RolloutOutcome(Summary(), tmp_path / "rows.jsonl"), "rollout")
    assert data["output"] == str(tmp_path / "rows.jsonl")
    assert _schema_check(capsys, TrainOutcome(Trained()), "train")["steps"] == 3


def test_convert_failure_is_a_schema_valid_error_object(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from envkit.cli.app import cli

    bad = tmp_path / "env-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    result = CliRunner().invoke(cli, [
        "convert", "verifiers", "--hub-id", "o/env", "--wheel", str(bad),
        "-o", str(tmp_path / "pkg"), "--dataset-dir", str(tmp_path / "data"),
    ], standalone_mode=False)
    assert result.return_value == 1
    error = json.loads(result.stdout)
    Draft202012Validator(load_schema("error")).validate(error)
    assert error["error"]["kind"] == "failed"


def test_shell_completion_as_documented(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    script = Path(sys.executable).parent / "envkit"
    env = {**os.environ, "_ENVKIT_COMPLETE": "bash_complete", "COMP_WORDS": "envkit val",
           "COMP_CWORD": "1"}
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=False,
                          timeout=60, cwd=tmp_path)
    assert "validate" in done.stdout
    env = {**os.environ, "_ENVKIT_COMPLETE": "bash_source"}
    source = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=False,
                            timeout=60, cwd=tmp_path)
    assert "_envkit_completion" in source.stdout
    assert "_ENVKIT_COMPLETE=bash_source envkit" in (ROOT / "README.md").read_text()
