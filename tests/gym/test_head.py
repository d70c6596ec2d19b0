"""Readiness probes of Gym's head and servers: only an HTTP answer counts. A port that answers
in another protocol (picked free, then taken by one of Ray's gRPC servers: seen in a restart
during training, where its reply raised ``BadStatusLine`` out of the wait loop) is a host race
at the head, and "not ready" at a server."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from envkit.gym import GymRuntimeError
from envkit.gym.events import RuntimeEvents
from envkit.gym.head import PORT_TAKEN, ReadinessWatch, head_ready

# What the failed restart read on its head port (a binary framing, not an HTTP status line).
NOT_HTTP = b"\x00\x00\x18\x04\x00\x00\x00\x00\x00 @    @     @ \xfe           ?\r\n\r\n"


@pytest.fixture
def binary_port() -> Iterator[str]:
    """A loopback port that answers every connection with bytes that are not HTTP."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(4096)
                conn.sendall(NOT_HTTP)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_a_head_port_that_speaks_another_protocol_is_a_host_race(binary_port: str) -> None:
    """Gym's head will never answer on a port another process holds: a launch failure that
    ``GymRuntime.start`` retries on a new port (tests/gym/test_runtime_start.py)."""
    with pytest.raises(GymRuntimeError) as info:
        head_ready(binary_port)
    assert info.value.log_tail == PORT_TAKEN and info.value.stage == "start"


def test_nothing_listening_is_not_ready_yet() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert head_ready(f"http://127.0.0.1:{port}") is False


def test_the_watch_keeps_waiting_when_the_head_is_not_http(binary_port: str) -> None:
    watch = ReadinessWatch(binary_port, RuntimeEvents())
    watch.poll()
    assert watch.instances == {} and watch.ready_s == {}
