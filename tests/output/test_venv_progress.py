"""The venv progress lines: what each step prints on stderr, and that -q silences them."""

from __future__ import annotations

import io
import logging

import pytest
from rich.console import Console

from envkit.cli.app import _venv_progress
from envkit.gym.events import VenvStep, observers
from envkit.output.venvs import VenvProgress, step_line

_BUILD = [
    VenvStep("gym", None, "cached", 0.0, "nemo-gym 0.7.0"),
    VenvStep("resources_servers/char_pattern", "create", "start"),
    VenvStep("resources_servers/char_pattern", "create", "done", 0.4),
    VenvStep("resources_servers/char_pattern", "resolve", "start", 0.4),
    VenvStep("resources_servers/char_pattern", "resolve", "done", 3.9,
             "Resolved 159 packages in 3.87s"),
    VenvStep("resources_servers/char_pattern", "install", "start", 3.9),
    VenvStep("resources_servers/char_pattern", "install", "done", 7.6,
             "Installed 159 packages in 3.69s"),
    VenvStep("resources_servers/char_pattern", "wheels", "done", 12.2,
             "Installed 183 wheels from wheels/"),
]


def _render(steps: list[VenvStep]) -> str:
    out = io.StringIO()
    progress = VenvProgress(Console(file=out, force_terminal=False, width=200))
    for step in steps:
        progress.on_venv(step)
    return out.getvalue()


def test_each_finished_step_is_one_line_with_its_elapsed_time(
        capsys: pytest.CaptureFixture[str]) -> None:
    logging.getLogger().setLevel(logging.INFO)
    logging.getLogger("envkit").setLevel(logging.NOTSET)  # as a fresh process has it
    assert _render(_BUILD).splitlines() == [
        "Gym venv: cached (nemo-gym 0.7.0)",
        "venv resources_servers/char_pattern: building",
        "venv resources_servers/char_pattern: create done [0s]",
        "venv resources_servers/char_pattern: resolve done: Resolved 159 packages in 3.87s [4s]",
        "venv resources_servers/char_pattern: install done: Installed 159 packages in 3.69s [8s]",
        "venv resources_servers/char_pattern: wheels done: Installed 183 wheels from wheels/ "
        "[12s]",
    ]
    assert capsys.readouterr().out == ""  # results only on stdout


def test_reused_server_venvs_are_one_line() -> None:
    assert step_line(VenvStep("server venvs", None, "cached", 0.0, "3b69")) == (
        "server venvs: cached (3b69)")
    assert step_line(VenvStep("a/b", "install", "start")) is None


def test_quiet_prints_nothing() -> None:
    envkit_log = logging.getLogger("envkit")  # what -q sets (envkit.cli._logging)
    before = envkit_log.level
    envkit_log.setLevel(logging.WARNING)
    try:
        assert _render(_BUILD) == ""
    finally:
        envkit_log.setLevel(before)


@pytest.mark.parametrize(("command", "watched"), [
    ("smoke", True), ("train", True), ("rollout", True), ("probe", True), ("profile", True),
    ("validate", False),
])
def test_the_cli_watches_every_command_that_brings_gym_up(command: str, watched: bool) -> None:
    with _venv_progress(command):
        assert [type(o) for o in observers()] == ([VenvProgress] if watched else [])
