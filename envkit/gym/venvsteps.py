"""What ``gym env prefetch`` is doing, as :class:`~envkit.gym.events.VenvStep` events.

Why parse its output: Gym builds each server venv itself, and its only report is the text uv
and Gym print. uv's summary lines ("Resolved 159 packages in 3.29s", ...) end a step and
"Pre-warming venv for: <dir>" begins the next venv. A line no pattern knows is ignored: a
changed message costs progress detail, never a build.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["PrefetchSteps", "State", "Step", "VenvStep", "stream_lines"]

Step = Literal["create", "resolve", "download", "install", "wheels"]
State = Literal["start", "done", "cached"]


@dataclass(frozen=True, slots=True)
class VenvStep:
    """One step of one venv's set-up.

    ``venv``: ``gym`` for the head's venv, else the server's ``<type>/<name>``; ``step``: what
    uv does (``wheels`` is the second, offline install of the package's ``wheels/``);
    ``state``: ``start``/``done``, or ``cached`` (the venv was reused, no step runs);
    ``seconds``: since that venv's set-up began; ``detail``: uv's own summary line when it gave
    one (``Installed 183 packages in 21.4s``).
    """

    venv: str
    step: Step | None
    state: State
    seconds: float = 0.0
    detail: str = ""


_PREFIX = re.compile(r"^\([^)]*\) ")
"""Gym prefixes a server's setup output with its instance name: ``(policy_model) ...``."""
_VENV = re.compile(r"^Pre-warming venv for: (?P<path>.+)$")
_SUMMARY = re.compile(r"^(?P<verb>Resolved|Prepared|Installed|Audited) \d+ packages? in \S+$")
_AFTER: dict[str, tuple[Step, Step | None]] = {
    "Resolved": ("resolve", "download"),
    "Prepared": ("download", "install"),
    "Installed": ("install", None),
    "Audited": ("install", None),  # nothing to install: every requirement already there
}


class PrefetchSteps:
    """Feed it prefetch's lines; it calls ``emit`` with each step's start and end."""

    def __init__(self, emit: Callable[[VenvStep], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._emit = emit
        self._clock = clock
        self._venv: str | None = None
        self._started = 0.0
        self._running: Step | None = None

    def line(self, text: str) -> None:
        """One line of prefetch's output (with or without its ``(instance)`` prefix)."""
        text = _PREFIX.sub("", text.rstrip("\n"))
        if found := _VENV.match(text):
            self.finish()
            self._venv = "/".join(Path(found["path"].strip()).parts[-2:])
            self._started = self._clock()
            self._to("create")
        elif self._venv is None:
            return
        elif text.startswith("Activate with:"):
            self._to(None)
        elif text.startswith("Using Python ") and " environment at: " in text:
            self._to("resolve")
        elif found := _SUMMARY.match(text):
            done, after = _AFTER[found["verb"]]
            if self._running != done:  # uv skipped it (e.g. nothing to download)
                self._to(None)
                self._send(done, "start")
            self._send(done, "done", text)
            self._running = None
            self._to(after)

    def finish(self) -> None:
        """The current venv is done (the next one begins, or prefetch ended)."""
        self._to(None)
        self._venv = None

    def _to(self, step: Step | None) -> None:
        if self._running is not None:
            self._send(self._running, "done")
        self._running = step
        if step is not None:
            self._send(step, "start")

    def _send(self, step: Step, state: State, detail: str = "") -> None:
        assert self._venv is not None
        self._emit(VenvStep(self._venv, step, state, self._clock() - self._started, detail))


def stream_lines(stream: IO[str], on_line: Callable[[str], None], deadline: float) -> str | None:
    """Read ``stream`` to its end and close it, calling ``on_line`` per line from *this* thread.

    Why a reader thread: a blocking ``readline`` cannot see a deadline; the reader queues lines
    and this thread hands them on, so callbacks run where the caller's events expect them.

    :returns: everything read, or None when ``deadline`` (``time.monotonic``) passed first.
    """
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        with stream:  # the reader owns it: closed at EOF (also after a deadline), never by GC
            for raw in stream:
                lines.put(raw)
        lines.put(None)

    threading.Thread(target=read, name="envkit-prefetch-output", daemon=True).start()
    seen: list[str] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            raw = lines.get(timeout=min(left, 1.0))
        except queue.Empty:
            continue
        if raw is None:
            return "".join(seen)
        seen.append(raw)
        on_line(raw)
