"""Lifecycle callbacks of a Gym bring-up: what a caller may watch without subclassing.

Why callbacks: ``envkit smoke`` times each server's readiness, ``envkit probe`` brings a
package up once and sends many batches, the trainer only wants the servers. The runtime calls
them from the thread that runs ``start()``, in the order :class:`RuntimeEvents` defines them
(``on_launch`` again after a retry or a restart: a watcher resets what it recorded). Every
runtime also tells the observers installed with :func:`observing` (the CLI's progress), so no
command passes a renderer down. A failure raises ``GymRuntimeError`` instead; an exception from
a callback ends the start like any other failure, so callbacks must return quickly.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from envkit.gym.venvsteps import VenvStep

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

    from envkit.gym.types import GymServers, ServerInfo

__all__ = ["Fanout", "RuntimeEvents", "VenvStep", "observers", "observing"]

class RuntimeEvents:
    """No-op callbacks: subclass and override the ones you need."""

    def on_venv(self, step: VenvStep) -> None:
        """A venv set-up step started, finished, or was skipped (cached)."""

    def on_setup_done(self, venv_dir: Path, seconds: float) -> None:
        """The server venvs under ``venv_dir`` are ready; ``seconds`` since ``start()``."""

    def on_launch(self, head_url: str) -> None:
        """``gym env start`` was spawned; its head server will listen at ``head_url``."""

    def on_servers_known(self, servers: Mapping[str, ServerInfo]) -> None:
        """The head server listed the instances it starts (instance name -> info)."""

    def on_server_ready(self, name: str, seconds: float) -> None:
        """Server ``name`` answered HTTP, ``seconds`` after the launch."""

    def on_ready(self, servers: GymServers, seconds: float) -> None:
        """Every server is ready, ``seconds`` after the launch."""


_OBSERVERS: list[RuntimeEvents] = []


@contextlib.contextmanager
def observing(events: RuntimeEvents) -> Iterator[RuntimeEvents]:
    """Tell ``events`` about every runtime started inside the block (the CLI's progress)."""
    _OBSERVERS.append(events)
    try:
        yield events
    finally:
        _OBSERVERS.remove(events)


def observers() -> tuple[RuntimeEvents, ...]:
    """The observers installed now, outermost first."""
    return tuple(_OBSERVERS)


class Fanout(RuntimeEvents):
    """Every callback to each of ``targets`` in order (the caller's events, then observers)."""

    def __init__(self, *targets: RuntimeEvents) -> None:
        self.targets = targets

    def on_venv(self, step: VenvStep) -> None:
        for target in self.targets:
            target.on_venv(step)

    def on_setup_done(self, venv_dir: Path, seconds: float) -> None:
        for target in self.targets:
            target.on_setup_done(venv_dir, seconds)

    def on_launch(self, head_url: str) -> None:
        for target in self.targets:
            target.on_launch(head_url)

    def on_servers_known(self, servers: Mapping[str, ServerInfo]) -> None:
        for target in self.targets:
            target.on_servers_known(servers)

    def on_server_ready(self, name: str, seconds: float) -> None:
        for target in self.targets:
            target.on_server_ready(name, seconds)

    def on_ready(self, servers: GymServers, seconds: float) -> None:
        for target in self.targets:
            target.on_ready(servers, seconds)
