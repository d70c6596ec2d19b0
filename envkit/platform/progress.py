"""Progress on stderr: one rich bar per FileSet while uploading, one live line while a job runs."""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rich.console import Console
    from rich.progress import Progress as RichBar
    from rich.progress import TaskID

__all__ = ["CountingProgress", "RichProgress", "live_status", "status_line", "upload_progress"]


class CountingProgress:
    """No display; counts what was sent (tests, ``--quiet``)."""

    def __init__(self) -> None:
        self.nbytes = 0
        self.files = 0
        self._lock = threading.Lock()

    def start(self, label: str, files: int, nbytes: int) -> None:
        pass

    def advance(self, nbytes: int) -> None:
        with self._lock:
            self.nbytes += nbytes

    def file_done(self) -> None:
        with self._lock:
            self.files += 1


class RichProgress(CountingProgress):
    """A bar per FileSet; a FileSet with nothing to send prints one 'up to date' line."""

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        super().__init__()
        self._console = console
        self._bar: RichBar = Progress(
            TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
            TransferSpeedColumn(), TextColumn("{task.fields[files]}"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self._task: TaskID | None = None
        self._files_total = 0
        self._files_done = 0

    def __enter__(self) -> RichProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def start(self, label: str, files: int, nbytes: int) -> None:
        if files == 0:
            self._console.print(f"{label}: up to date, nothing to upload")
            self._task = None
            return
        self._files_total, self._files_done = files, 0
        self._task = self._bar.add_task(f"upload {label}", total=nbytes,
                                        files=f"0/{files} files")

    def advance(self, nbytes: int) -> None:
        super().advance(nbytes)
        if self._task is not None:
            self._bar.advance(self._task, nbytes)

    def file_done(self) -> None:
        super().file_done()
        with self._lock:
            self._files_done += 1
            done = self._files_done
        if self._task is not None:
            self._bar.update(self._task, files=f"{done}/{self._files_total} files")


@contextlib.contextmanager
def upload_progress(show: bool) -> Iterator[CountingProgress]:
    """Bars on stderr, or (``-q``) just the counts."""
    if not show:
        yield CountingProgress()
        return
    from rich.console import Console

    with RichProgress(Console(file=sys.stderr)) as progress:
        yield progress


def status_line(status: dict[str, Any]) -> str:
    """``status running  step training  training step 3  train_reward 0.4``."""
    from envkit.metrics.records import latest, metrics_records

    records = metrics_records(status)
    steps = status.get("steps") or []
    current = next((s.get("name") for s in steps if s.get("status") != "completed"), None)
    parts = [f"status {status.get('status')}"]
    if current:
        parts.append(f"step {current}")
    if records:
        parts.append(f"training step {records[-1]['step']}")
    for key in ("train_reward", "val_accuracy"):
        value = latest(records, key)
        if value is not None:
            parts.append(f"{key} {value:.4g}")
    return "  ".join(parts)


@contextlib.contextmanager
def live_status(show: bool) -> Iterator[Callable[[str], None]]:
    """One line on stderr, redrawn in place as the job moves (nothing with ``-q``)."""
    if not show:
        yield lambda text: None
        return
    from rich.console import Console
    from rich.live import Live

    with Live("", console=Console(file=sys.stderr), refresh_per_second=4,
              transient=False) as live:
        yield live.update
