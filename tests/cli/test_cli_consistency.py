"""What a user reading ``--help`` and the docs relies on: every command ends its help with one
example, a mistyped command gets a did-you-mean, every code a diagnostic can carry is one
``envkit rule`` explains and ``--ignore`` accepts, and ``--show-settings`` prints values."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from support.paths import FIXTURES

from envkit.cli import main
from envkit.cli._examples import EXAMPLES
from envkit.cli.app import COMMANDS, cli
from envkit.validate.settings import PROBE_DEFAULTS


def _commands() -> list[tuple[str, click.Command]]:
    out = []

    def walk(path: str, command: click.Command) -> None:
        out.append((path, command))
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(f"{path} {name}", sub)

    for name in COMMANDS:
        ctx = click.Context(cli, info_name="envkit")
        command = cli.get_command(ctx, name)
        assert command is not None
        walk(name, command)
    return out


@pytest.mark.parametrize(("path", "command"), _commands(), ids=lambda v: str(v))
def test_every_help_ends_with_one_example(path: str, command: click.Command) -> None:
    assert path in EXAMPLES, f"`envkit {path}` has no example: add one to envkit/cli/_examples.py"
    help_text = CliRunner().invoke(cli, [*path.split(), "--help"]).output
    tail = help_text.rstrip().splitlines()[-2:]
    assert tail[0].strip() == "Example:" and tail[1].strip().startswith("envkit "), help_text
    assert help_text.count("Example:") == 1


def test_examples_name_real_flags() -> None:
    """Every ``--flag`` an example shows is an option of that command."""
    for path, command in _commands():
        flags = {o for p in command.params for o in getattr(p, "opts", [])}
        example = EXAMPLES[path]
        if path in ("job", "convert"):  # a group's example runs one of its commands
            continue
        for flag in [w for w in example.split() if w.startswith("-")]:
            assert flag in flags, f"{path}: {flag}"


def test_a_mistyped_command_suggests_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validat"]) == 2
    assert "Did you mean 'validate'?" in capsys.readouterr().err


def test_ek000_is_a_code_the_cli_knows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "EK000"]) == 0
    assert "EK000" in capsys.readouterr().out
    pkg = FIXTURES / "packages" / "EK102-unknown-top-level-key" / "pkg"
    assert main(["validate", str(pkg), "--ignore", "EK000"]) == 1
    assert "EK102" in capsys.readouterr().out


def test_show_settings_prints_the_probe_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    pkg = FIXTURES / "packages" / "EK102-unknown-top-level-key" / "pkg"
    assert main(["validate", "--show-settings", str(pkg), "--output-format", "json"]) == 0
    settings = json.loads(capsys.readouterr().out)["packages"][0]["settings"]
    for key, default in PROBE_DEFAULTS.items():
        assert settings[key] == default, key


def test_probe_thresholds_default_to_the_settings_defaults() -> None:
    from envkit.probe.thresholds import Thresholds

    t = Thresholds()
    assert (t.margin, t.repeats, t.rows, t.concurrency, t.rollout_timeout_s) == (
        PROBE_DEFAULTS["probe-margin"], PROBE_DEFAULTS["probe-repeats"],
        PROBE_DEFAULTS["probe-rows"], PROBE_DEFAULTS["probe-concurrency"],
        PROBE_DEFAULTS["probe-rollout-timeout"])


def test_ek100_in_a_fresh_project_points_at_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert main(["init", str(tmp_path / "my-env")]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path / "my-env")
    assert main(["validate"]) == 1
    out = capsys.readouterr().out
    assert "EK100" in out and "envkit build resources_servers/my_env -o package" in out


def test_gym_python_help_gives_the_order_the_code_looks_in() -> None:
    module, attr = COMMANDS["smoke"]
    command = getattr(importlib.import_module(module), attr)
    option = next(p for p in command.params if p.name == "gym_python")
    assert option.help is not None
    assert option.help.index("ENVKIT_GYM_PYTHON") < option.help.index("PATH")


def test_format_names_the_package_format_only() -> None:
    """``--format`` in ``--help`` is a package format (build, init); what is printed is
    ``--output-format``, whose default is ``human`` or ``json``."""
    from envkit.cli._common import AliasOption

    formats = {"native-v1", "wheels-v1", "adapter-wheels-v1"}
    for path, command in _commands():
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            hidden = set(param.hidden_aliases) if isinstance(param, AliasOption) else set()
            if "--format" in set(param.opts) - hidden:
                assert isinstance(param.type, click.Choice), path
                assert set(param.type.choices) <= formats, path
            if param.name == "output_format":
                assert param.default in ("human", "json"), path
