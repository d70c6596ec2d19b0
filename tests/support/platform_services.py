"""Start the real NeMo Platform services (nemo-platform 0.6.0) on a free loopback port.

Two modes: ``e2e`` runs a job's whole lifecycle without a cluster (the jobs controller's e2e
backend walks every step to ``completed``); ``default`` is the bundled configuration, where
every valid GRPO submit ends in the platform's own 422 (no Kubernetes runtime).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from support.platform_venv import ensure_platform_venv

__all__ = ["free_port", "register_model", "running_services"]

_SERVICES = "files,entities,auth,secrets,jobs,models,customization"
# The Files service stores under /data/files_storage unless told otherwise, whatever
# NMP_DATA_DIR says: two instances (or two helpers) would share FileSet contents.
_FILES_CONFIG = """\
files:
  default_storage_config: {{type: local, path: "{path}"}}
"""
_E2E_CONFIG = """\
platform:
  runtime: kubernetes
auth:
  enabled: false
jobs:
  executors:
    - {provider: cpu, profile: default, backend: e2e}
    - {provider: cpu, profile: gpu, backend: e2e}
    - {provider: gpu, profile: default, backend: e2e}
    - {provider: gpu, profile: gpu, backend: e2e}
"""
# The e2e backend never talks to a cluster, but the controller loads a kubeconfig at start.
_KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: dummy
clusters: [{name: dummy, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: dummy, context: {cluster: dummy, user: dummy}}]
users: [{name: dummy, user: {token: dummy}}]
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health/ready", timeout=2) as reply:
            return reply.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _command(workdir: Path, mode: str, port: int) -> tuple[list[str], dict[str, str]]:
    nemo = str(ensure_platform_venv().parent / "nemo")
    cmd = [nemo, "services", "run", "--services", _SERVICES, "--port", str(port)]
    env = {**os.environ, "NEMO_TELEMETRY_ENABLED": "false", "NMP_DATA_DIR": str(workdir / "data")}
    config = _FILES_CONFIG.format(path=workdir / "files")
    if mode == "e2e":
        config += _E2E_CONFIG
        (workdir / "kubeconfig").write_text(_KUBECONFIG)
        cmd += ["--controllers", "jobs"]
        env.update(NMP_SANDBOX_CLUSTER_CAPABLE="true", NMP_RL_JOB_STORAGE_PVC_CLAIM="x",
                   POD_NAMESPACE="default", KUBECONFIG=str(workdir / "kubeconfig"))
    (workdir / "platform.yaml").write_text(config)
    cmd += ["--config", str(workdir / "platform.yaml")]
    for key in ("NMP_BASE_URL", "NMP_ACCESS_TOKEN", "NMP_WORKSPACE"):
        env.pop(key, None)
    return cmd, env


@contextlib.contextmanager
def running_services(workdir: Path, mode: str = "e2e", timeout: float = 180.0):
    """Yield the base URL of freshly started services; stop them (whole group) after."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cmd, env = _command(workdir, mode, port)
    log = (workdir / "services.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while not _ready(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (workdir / "services.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"platform services did not start ({mode}):\n{tail}")
            time.sleep(1.0)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _call(method: str, url: str, body: bytes | None, ctype: str) -> int:
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=30) as reply:
            return reply.status
    except urllib.error.HTTPError as exc:
        return exc.code


def register_model(base_url: str, workspace: str, name: str) -> str:
    """A model entity with a FileSet attached (a GRPO submit is a 422 without one)."""
    files = f"{base_url}/apis/files/v2/workspaces/{workspace}/filesets"
    fileset = f"{name}-weights"
    _call("POST", files, json.dumps({"name": fileset, "purpose": "model"}).encode(),
          "application/json")
    _call("PUT", f"{files}/{fileset}/-/config.json", b"{}", "application/octet-stream")
    models = f"{base_url}/apis/models/v2/workspaces/{workspace}/models"
    body = json.dumps({"name": name, "fileset": f"{workspace}/{fileset}"}).encode()
    status = _call("POST", models, body, "application/json")
    assert status in (200, 201, 409), status
    return f"{workspace}/{name}"


def create_workspace(base_url: str, name: str) -> None:
    body = json.dumps({"name": name}).encode()
    status = _call("POST", f"{base_url}/apis/entities/v2/workspaces", body, "application/json")
    assert status in (200, 201, 409), status


class CountingProxy:
    """A loopback HTTP proxy in front of the real services that records every request.

    Why: "the rerun does not resend files already uploaded" is a statement about PUTs on the
    wire; the services keep no such count. ``put_delay`` slows PUTs so a test can SIGKILL the
    client mid-upload.
    """

    def __init__(self, upstream: str, put_delay: float = 0.0) -> None:
        import http.server
        import threading
        from urllib.parse import urlsplit

        self.upstream = urlsplit(upstream)
        self.put_delay = put_delay
        self.log: list[tuple[str, str, int]] = []  # (method, path, upstream status)
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                proxy.forward(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.handle_error = lambda *_: None  # type: ignore[method-assign]  # SIGKILLed client
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def forward(self, handler) -> None:  # type: ignore[no-untyped-def]
        import http.client

        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        if body is not None and len(body) < length:  # the client died mid-PUT: drop it
            with self._lock:
                self.log.append((handler.command, handler.path, 499))
            handler.close_connection = True
            return
        if handler.command == "PUT" and self.put_delay:
            time.sleep(self.put_delay)
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=120)
        try:
            self._relay(handler, conn, body)
        except OSError:  # the client went away (SIGKILL): nothing to answer
            handler.close_connection = True
        finally:
            conn.close()

    def _relay(self, handler, conn, body) -> None:  # type: ignore[no-untyped-def]
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("host",)}
        conn.request(handler.command, handler.path, body=body, headers=headers)
        reply = conn.getresponse()
        data = reply.read()
        with self._lock:
            self.log.append((handler.command, handler.path, reply.status))
        handler.send_response(reply.status)
        for key, value in reply.getheaders():
            if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(data)

    def puts(self, ok_only: bool = True) -> list[str]:
        with self._lock:
            return [p for m, p, s in self.log if m == "PUT" and (s < 300 or not ok_only)]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
