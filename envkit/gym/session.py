"""One Gym session: a policy endpoint + the package's Gym servers, up together, down together.

``envkit rollout``, ``envkit smoke``, the probe and the trainer's Gym source each hold one. It
stays up between ``collect`` calls, so a caller that sends rows in rounds (the trainer's steps,
a probe's policies one after another) pays the start once; with a scripted backend
(``envkit.policy_server.scripted``) the answers can change between rounds without touching the
servers. :meth:`GymSession.dead` is what ``collect`` polls: Gym's clients retry a refused
connection forever, so a dead server would otherwise end a batch only at the row timeout.
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from envkit.gym.processes import STOP_GRACE_S
from envkit.gym.servers import GymRuntime

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from envkit.gym.events import RuntimeEvents
    from envkit.gym.types import GymServers, PolicyEndpoint, RuntimeOptions, ServerInfo

__all__ = ["GymSession", "SupportsClose", "unreachable"]

log = logging.getLogger(__name__)

class SupportsClose(Protocol):
    def close(self) -> None: ...


def unreachable(servers: Mapping[str, ServerInfo], timeout_s: float = 2.0) -> list[str]:
    """Names of servers whose port refuses a TCP connection (the process died).

    Why probe: a request to a dead server can sit in an agent's retry loop until the row
    timeout; a connect check finds the dead server in milliseconds.
    """
    dead = []
    for name, info in servers.items():
        parts = urlsplit(info.url)
        if parts.hostname is None or parts.port is None:
            continue
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=timeout_s):
                pass
        except OSError:
            dead.append(name)
    return dead


class GymSession(GymRuntime):
    """``with GymSession(pkg, endpoint, options, owned=(server, backend)) as servers:``.

    A runtime that also owns the policy side: ``owned`` (the endpoint's server, its engine) is
    closed after the Gym servers, in the order given. The package is read (as validation reads
    it) on construction, so a package Gym cannot start fails before anything runs.
    """

    def __init__(self, package: Path, endpoint: PolicyEndpoint, options: RuntimeOptions,
                 owned: Sequence[SupportsClose] = (), *,
                 events: RuntimeEvents | None = None) -> None:
        super().__init__(package, endpoint, options, events)
        self._owned = list(owned)

    def restart(self) -> GymServers:
        """Bring the Gym servers up again (the policy endpoint keeps running)."""
        log.warning("restarting the Gym servers of %s", self.package)
        self.close(final=False)
        return self.start()

    def close(self, grace_s: float = STOP_GRACE_S, *, final: bool = True) -> None:
        """Gym servers first (they call the policy), then, when ``final``, the policy side."""
        self.servers = None
        super().close(grace_s, final=final)
        if final:
            owned, self._owned = self._owned, []
            for part in owned:
                part.close()

    def dead(self) -> str | None:
        """Why the servers cannot serve (Gym exited, a port refuses connections), or None."""
        if self.servers is None:
            return "the Gym servers are not running"
        if (exc := self.failure()) is not None:
            return str(exc)
        dead = unreachable(self.servers.servers)
        return f"Gym server(s) not accepting connections: {', '.join(dead)}" if dead else None
