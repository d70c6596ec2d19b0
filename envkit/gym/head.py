"""What Gym's head server tells about a launch: readiness, the instances, the merged config.

Each server's own port is probed to learn when it first answers, as Gym's
``check_http_server_statuses`` does (any HTTP answer counts); :class:`ReadinessWatch` turns
those probes into :class:`~envkit.gym.events.RuntimeEvents`.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from envkit.gym.types import GymRuntimeError, GymServers, ServerInfo
from envkit.model.yamlio import parse_yaml

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.gym.events import RuntimeEvents

__all__ = ["PORT_TAKEN", "ReadinessWatch", "describe", "head_ready", "relays"]


def _status(url: str) -> int | None:
    """The HTTP status ``url`` answers with within 2 s; None when nothing answers.

    :raises http.client.HTTPException: something answers, but not in HTTP.
    """
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return None


def _answers(url: str) -> bool:
    """Any HTTP answer from ``url``; a reply in another protocol is none (its
    ``BadStatusLine`` once escaped the wait loop of a restart)."""
    try:
        return _status(url) is not None
    except http.client.HTTPException:
        return False


PORT_TAKEN = "answers in another protocol: another process holds the port"
"""What :func:`head_ready` raises with when the head's port is not Gym's (a host race)."""


def head_ready(head: str) -> bool:
    """Gym's head says every server is ready.

    :raises GymRuntimeError: (``PORT_TAKEN`` as its log) the port answers, but not in HTTP:
        it was picked free and another process (one of Ray's gRPC servers, seen) took it
        before Gym's head could bind it, so the head will never answer there (a host race:
        the launch is retried).
    """
    try:
        return _status(f"{head}/readyz") == 200
    except http.client.HTTPException:
        raise GymRuntimeError(f"Gym's head cannot start: {head} {PORT_TAKEN}",
                              log_tail=PORT_TAKEN, stage="start") from None


def _get_text(url: str, timeout_s: float = 10) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return str(resp.read().decode())


def _instances(head: str, timeout_s: float = 10) -> dict[str, ServerInfo]:
    """``/server_instances`` as instance name (Gym's ``process_name``) -> info."""
    found = json.loads(_get_text(f"{head}/server_instances", timeout_s))
    return {
        str(i["process_name"]): ServerInfo(str(i["process_name"]), i["server_type"], i["name"],
                                           i["url"], i.get("pid"))
        for i in found if isinstance(i, dict) and i.get("process_name")
    }


def _load_config(text: str) -> dict[str, Any]:
    """The head server returns the YAML text JSON-encoded as a string."""
    data = parse_yaml("global_config_dict_yaml", text.encode()).data
    if isinstance(data, str):
        data = parse_yaml("global_config_dict_yaml", data.encode()).data
    return data if isinstance(data, dict) else {}


def relays(config: dict[str, Any], servers: dict[str, ServerInfo]) -> dict[str, str]:
    """agent instance -> the environment server that relays it (Gym routes rows through it)."""
    found: dict[str, str] = {}
    for name, block in config.items():
        if name not in servers or not isinstance(block, dict):
            continue
        for impl in (block.get("environment_servers") or {}).values():
            ref = (impl or {}).get("agent_server") or {}
            if isinstance(ref, dict) and ref.get("name"):
                found.setdefault(str(ref["name"]), name)
    return found


def describe(head: str, log_dir: Path) -> GymServers:
    """The running servers as the head lists them, with the merged config and the relays."""
    servers = _instances(head)
    config = _load_config(_get_text(f"{head}/global_config_dict_yaml"))
    return GymServers(head, servers, config, log_dir, relays(config, servers))


class ReadinessWatch:
    """Per-server readiness during one launch, polled by the runtime's wait loop.

    ``ready_s``: instance -> seconds from the launch to its first HTTP answer.
    """

    def __init__(self, head: str, events: RuntimeEvents) -> None:
        self.head = head
        self.events = events
        self.started = time.monotonic()
        self.instances: dict[str, ServerInfo] = {}
        self.ready_s: dict[str, float] = {}

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def poll(self) -> None:
        """Learn the instances (once the head answers), then probe those not ready yet."""
        if not self.instances:
            try:
                self.instances = _instances(self.head, timeout_s=2)
            except (http.client.HTTPException, OSError, ValueError, KeyError, TypeError):
                return
            if self.instances:
                self.events.on_servers_known(dict(self.instances))
        for name, info in self.instances.items():
            if name not in self.ready_s and _answers(info.url):
                self.ready_s[name] = self.elapsed()
                self.events.on_server_ready(name, self.ready_s[name])

    def not_ready(self) -> tuple[str, ...]:
        return tuple(sorted(n for n in self.instances if n not in self.ready_s))
