"""The platform client's parts that need no platform: connection, retries, names, metrics."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest

from envkit.metrics.records import metrics_records, write_metrics
from envkit.platform import PlatformError, resolve_connection
from envkit.platform.errors import ek_code_for, format_detail
from envkit.platform.filesets import fileset_name, scan_tree
from envkit.platform.http import PlatformClient, retry_delay

CONFIG = """\
current_context: prod
clusters:
  - {name: c1, base_url: "https://nmp.example.com", certificate_authority: /etc/ca.pem}
users:
  - {name: u1, token: secret-from-config}
contexts:
  - {name: prod, cluster: c1, user: u1, workspace: team}
"""


def test_connection_resolution_order(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG)
    env = {"NMP_CONFIG_PATH": str(cfg)}
    conn = resolve_connection(env=env)
    assert (conn.base_url, conn.workspace, conn.token) == (
        "https://nmp.example.com", "team", "secret-from-config")
    assert conn.verify == "/etc/ca.pem"
    env |= {"NMP_BASE_URL": "http://127.0.0.1:9/", "NMP_ACCESS_TOKEN": "t2", "NMP_WORKSPACE": "w"}
    conn = resolve_connection(env=env)
    assert (conn.base_url, conn.workspace, conn.token) == ("http://127.0.0.1:9", "w", "t2")
    assert resolve_connection("http://x", "y", env=env).base_url == "http://x"
    assert "t2" not in repr(conn) and "secret" not in repr(resolve_connection(env={**env}))


def test_no_config_means_the_local_default(tmp_path: Path) -> None:
    conn = resolve_connection(env={"HOME": str(tmp_path)})
    assert (conn.base_url, conn.workspace, conn.token) == ("http://127.0.0.1:8080", "default",
                                                           None)
    assert conn.verify is True


@pytest.mark.parametrize(("attempt", "header", "expected"), [
    (0, None, 0.5), (3, None, 4.0), (10, None, 30.0), (0, "7", 7.0), (0, "900", 30.0),
    (2, "soon", 2.0)])
def test_retry_delay_honours_retry_after(attempt, header, expected) -> None:
    assert retry_delay(attempt, header) == expected


def test_detail_formats() -> None:
    body = {"detail": [{"type": "x", "loc": ["body", "spec", "training"], "msg": "bad"}]}
    assert format_detail(body) == "`spec.training`: bad"
    assert format_detail({"detail": "Failed to transform"}) == "Failed to transform"


@pytest.mark.parametrize(("detail", "code"), [
    ("GRPO dataset fileset 'w/d' must contain training.jsonl (Gym JSONL rows)", "EK500"),
    ("`spec.training.grpo.temprature`: Extra inputs are not permitted", "EK610"),
    ("Environment fileset 'w/p' has no nemo-environment.yaml at its root.", "EK100"),
    ("Model entity not found: 'w/m'. Verify the model entity exists.", None)])
def test_platform_details_map_to_ek_codes(detail, code) -> None:
    assert ek_code_for(detail) == code


def test_fileset_names_follow_the_platform_rule() -> None:
    digest = "ab" * 32
    assert fileset_name("Char Pattern", digest) == "char-pattern-" + digest[:16]
    assert fileset_name("9lives", digest).startswith("e-9lives-")
    assert len(fileset_name("x" * 200, digest)) <= 63


def test_tree_digest_tracks_content_and_purpose(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.txt").write_text("one")
    first = scan_tree(tmp_path, "environment")
    assert [f.path for f in first.files] == ["a/f.txt"]
    assert scan_tree(tmp_path, "dataset").digest != first.digest
    (tmp_path / "a" / "f.txt").write_text("two")
    assert scan_tree(tmp_path, "environment").digest != first.digest


def test_metrics_records_use_local_field_names(tmp_path: Path) -> None:
    status = {"status_details": {"metrics": {
        "train_reward": [{"step": 2, "epoch": 0, "value": 0.5}, {"step": 1, "value": 0.1}],
        "val_accuracy": [{"step": 2, "value": 0.25}]}}}
    records = metrics_records(status)
    assert records == [{"step": 1, "train_reward": 0.1},
                       {"step": 2, "train_reward": 0.5, "val_accuracy": 0.25}]
    path = write_metrics(records, tmp_path)
    from envkit.trainer.metrics import read_metrics

    assert read_metrics(path) == records
    assert metrics_records({"status_details": {}}) == []


class _Scripted(http.server.BaseHTTPRequestHandler):
    """Answers from a script: the platform cannot be made to send 429 or 401 on demand."""

    script: ClassVar[list[tuple[int, dict[str, str], dict]]] = []
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        _Scripted.seen.append((self.path, self.headers.get("Authorization")))
        status, headers, body = _Scripted.script.pop(0)
        data = json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Scripted.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_retries_429_and_5xx_with_retry_after(scripted) -> None:
    _Scripted.script = [(429, {"Retry-After": "1"}, {}), (503, {}, {}), (200, {}, {"ok": 1})]
    slept: list[float] = []
    conn = resolve_connection(scripted, "w", env={"NMP_ACCESS_TOKEN": "tok"})
    with PlatformClient(conn, sleep=slept.append) as client:
        assert client.json("GET", "/x") == {"ok": 1}
    assert slept == [1.0, 1.0]  # Retry-After: 1, then the 2nd backoff step (0.5 * 2)
    assert _Scripted.seen[0] == ("/x", "Bearer tok")


def test_401_is_one_line_without_the_token(scripted) -> None:
    _Scripted.script = [(401, {}, {"detail": "Not authenticated"})]
    conn = resolve_connection(scripted, "w", env={"NMP_ACCESS_TOKEN": "very-secret"})
    with PlatformClient(conn) as client, pytest.raises(PlatformError) as err:
        client.json("GET", "/x")
    text = str(err.value)
    assert "HTTP 401" in text and "NMP_ACCESS_TOKEN" in text and "very-secret" not in text
    assert "\n" not in text


_NO_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "1"}
"""A bare environment would let these runs write ``__pycache__`` into the checkout (which the
gate benchmark's runs without bytecode would then read)."""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_platform_is_one_line_exit_1() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    proc = subprocess.run([sys.executable, "-m", "envkit", "job", "status", "rl-x",
                           "--base-url", url], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent",
                               "NMP_ACCESS_TOKEN": "never-printed", **_NO_BYTECODE})
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "cannot reach NeMo Platform at" in proc.stderr
    assert "never-printed" not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr


def test_submit_usage_errors_exit_2(tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    job.write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "envkit", "submit", str(job)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--env" in proc.stderr


def test_a_missing_ca_bundle_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG.replace("/etc/ca.pem", str(tmp_path / "missing.pem")))
    proc = subprocess.run([sys.executable, "-m", "envkit", "job", "status", "rl-x"],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "NMP_CONFIG_PATH": str(cfg),
                               **_NO_BYTECODE})
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "cannot set up the connection" in proc.stderr
    assert "secret-from-config" not in proc.stderr
