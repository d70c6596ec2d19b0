"""``--offline``: run the servers with no route out, and say how that was enforced.

Preferred: a network namespace holding only loopback, entered by this thread (``unshare``) and
left again (``setns``) around the run. Everything started inside (the scripted policy, Gym, its
Ray, every server) inherits it, so a server that reaches for the network fails at spin-up, as on
an air-gapped cluster. Network namespaces are per thread on Linux, so the caller's other threads
(and the process after the block) keep the host network. Needs CAP_SYS_ADMIN (root).

Fallback: an HTTP(S) proxy on loopback that refuses every request and records the host asked
for, exported as ``HTTP(S)_PROXY``/``ALL_PROXY``. Weaker (a raw socket bypasses it), and the
report says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal, TypedDict

__all__ = ["Isolation", "IsolationDict", "offline_if", "offline_network"]

log = logging.getLogger(__name__)

_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
               "all_proxy")
_FORCE_ENV = "ENVKIT_SMOKE_ISOLATION"
"""``proxy`` forces the fallback (tests it on machines where the namespace works)."""


class IsolationDict(TypedDict):
    """How the run was kept offline, in smoke's JSON (``envkit schema smoke``)."""

    kind: Literal["netns", "proxy"]
    detail: str
    refused: list[str]


@dataclass
class Isolation:
    """How the run was cut off: ``netns`` or ``proxy``; ``refused`` lists proxied hosts."""

    kind: Literal["netns", "proxy"]
    detail: str
    refused: list[str] = field(default_factory=list)

    def to_dict(self) -> IsolationDict:
        return {"kind": self.kind, "detail": self.detail, "refused": sorted(set(self.refused))}


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _enter_new_netns() -> bool:
    if os.environ.get(_FORCE_ENV) == "proxy" or not hasattr(ctypes.CDLL(None), "unshare"):
        return False
    if _libc().unshare(_CLONE_NEWNET) != 0:
        return False  # EPERM: not root; the proxy fallback takes over
    _loopback_up()
    return True


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        got = fcntl.ioctl(sock, _SIOCGIFFLAGS, struct.pack("16sh22x", b"lo", 0))
        flags = struct.unpack("16sh22x", got)[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | _IFF_UP))


def _no_route_proof() -> str:
    """Connect to a public address: in the namespace this must fail at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        try:
            sock.connect(("1.1.1.1", 443))
        except OSError as exc:
            return errno.errorcode.get(exc.errno or 0, str(exc))
    msg = "the network namespace still routes to 1.1.1.1"
    raise RuntimeError(msg)


@contextlib.contextmanager
def _netns(host_fd: int) -> Iterator[Isolation]:
    try:
        proof = _no_route_proof()
        yield Isolation("netns", f"network namespace with loopback only (1.1.1.1:443: {proof})")
    finally:
        if _libc().setns(host_fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            msg = f"cannot return to the host network namespace: {os.strerror(err)}"
            raise OSError(err, msg)


class _Refuser(BaseHTTPRequestHandler):
    server: _ProxyServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the report lists the refused hosts."""

    def _refuse(self) -> None:
        self.server.refused.append(self.path.split("/")[2] if "://" in self.path else self.path)
        body = b"envkit smoke --offline: network access refused\n"
        self.send_response(403, "Forbidden (envkit smoke --offline)")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_CONNECT = do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _refuse


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    refused: list[str]


@contextlib.contextmanager
def _proxy() -> Iterator[Isolation]:
    server = _ProxyServer(("127.0.0.1", 0), _Refuser)
    server.refused = []
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="envkit-refuser")
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    saved = {k: os.environ.get(k) for k in (*_PROXY_VARS, "NO_PROXY", "no_proxy")}
    os.environ.update(dict.fromkeys(_PROXY_VARS, url))
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost,::1"
    iso = Isolation("proxy", f"refusing proxy {url} (no network namespace here: a raw socket "
                             "would bypass it)", server.refused)
    try:
        yield iso
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def offline_network() -> Iterator[Isolation]:
    """Run the block with no route out (namespace, else refusing proxy); yields how."""
    host_fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        ctx = _netns(host_fd) if _enter_new_netns() else _proxy()
        with ctx as isolation:
            yield isolation
    finally:
        os.close(host_fd)


@contextlib.contextmanager
def offline_if(offline: bool) -> Iterator[Isolation | None]:
    """``offline_network()`` (logged) when ``offline``, else nothing: the whole bring-up of a
    smoke or a probe runs inside it."""
    if not offline:
        yield None
        return
    with offline_network() as isolation:
        log.info("offline: %s", isolation.detail)
        yield isolation
