"""Progress on stderr while the Gym venv and the server venvs build: which venv, which step,
how long, and which were reused.

Gym runs uv behind a pipe, so a first bring-up spent minutes saying nothing. Each finished step
is one line, so a CI log keeps them; on a terminal a spinner also shows the running step.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from envkit.gym import RuntimeEvents

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console
    from rich.status import Status

    from envkit.gym import VenvStep

__all__ = ["VenvProgress", "step_line"]

_NAMES = {"gym": "Gym venv", "server venvs": "server venvs"}


def _venv_name(venv: str) -> str:
    return _NAMES.get(venv, f"venv {venv}")


def step_line(step: VenvStep) -> str | None:
    """The line for a finished or skipped step (None for a start: the spinner shows those)."""
    name = _venv_name(step.venv)
    if step.state == "cached":
        what = f" ({step.detail})" if step.detail else ""
        return f"{name}: cached{what}"
    if step.state != "done":
        return None
    detail = f": {step.detail}" if step.detail else ""
    return f"{name}: {step.step} done{detail} [{step.seconds:.0f}s]"


class VenvProgress(RuntimeEvents):
    """Prints venv set-up steps on ``console`` (default: stderr), at ``-q`` nothing."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console
        self._status: Status | None = None

    def on_venv(self, step: VenvStep) -> None:
        if not logging.getLogger("envkit").isEnabledFor(logging.INFO):
            return
        console = self._get_console()
        if step.state == "start":
            self._spin(console, f"{_venv_name(step.venv)}: {step.step} ...")
            if step.step == "create":
                console.print(f"{_venv_name(step.venv)}: building", highlight=False)
            return
        self._stop()
        line = step_line(step)
        if line is not None:
            console.print(line, highlight=False, markup=False)

    def on_setup_done(self, venv_dir: Path, seconds: float) -> None:
        self._stop()

    def _get_console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=sys.stderr, soft_wrap=True)
        return self._console

    def _spin(self, console: Console, text: str) -> None:
        """A spinner with the running step, only on a terminal (a log gets the lines)."""
        if not console.is_terminal:
            return
        if self._status is None:
            self._status = console.status(text)
            self._status.start()
        else:
            self._status.update(text)

    def _stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
