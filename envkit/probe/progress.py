"""A progress bar per phase on stderr (rich), or nothing (tests, JSON to a pipe).

Why its own small interface: the phases count rollouts as they finish, from the sender's
threads; they should not know whether anyone is watching.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Protocol

__all__ = ["NO_PROGRESS", "Progress", "RichProgress"]


class Progress(Protocol):
    def phase(self, name: str, total: int) -> contextlib.AbstractContextManager[
            Callable[[int], None]]:
        """``with progress.phase("scoring", 240) as advance: advance(1)``."""
        ...


class _Silent:
    @contextlib.contextmanager
    def phase(self, name: str, total: int) -> Iterator[Callable[[int], None]]:
        def advance(n: int = 1) -> None:
            return None

        yield advance


NO_PROGRESS: Progress = _Silent()


class RichProgress:
    """One bar per phase, on stderr; rich only draws it when stderr is a terminal."""

    @contextlib.contextmanager
    def phase(self, name: str, total: int) -> Iterator[Callable[[int], None]]:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        columns = ("[bold]{task.description}", BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=Console(file=sys.stderr), transient=False) as bar:
            task = bar.add_task(name, total=total)

            def advance(n: int = 1) -> None:
                bar.advance(task, n)

            yield advance
