"""``envkit submit`` / ``envkit job`` on the CLI's one path, without the platform services:
the gate's validation, the ``platform`` extra's install line, exit codes, and JSON outputs
checked against the schemas ``envkit schema`` ships (a small local HTTP server plays the
job routes; the whole lifecycle against the real services is
tests/platform/test_submit_services.py)."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest
from jsonschema import Draft202012Validator
from support.paths import REPO_ROOT

import envkit.cli._extras as extras
from envkit.cli import main
from envkit.schemas import load_schema

ROOT = REPO_ROOT
JOB = ROOT / "examples" / "tiny_grpo.json"
VALID = ROOT / "fixtures" / "packages" / "valid-wheels-v1" / "pkg"
EK200 = ROOT / "fixtures" / "packages" / "EK200-jsonl-in-package" / "pkg"
STATUS = {"status": "running", "steps": [{"name": "training", "status": "running"}],
          "status_details": {"metrics": {"train_reward": [{"step": 1, "epoch": 0, "value": 0.25}],
                                         "val_accuracy": [{"step": 1, "epoch": 0, "value": 0.5}]}},
          "error_details": {}}


def _shaped(out: str, schema: str) -> dict[str, Any]:
    data = json.loads(out)
    Draft202012Validator(load_schema(schema)).validate(data)
    return data


def _closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("training.jsonl", "validation.jsonl"):
        text = (ROOT / "fixtures" / "packages" / "valid-dataset" / "data" / name).read_text()
        (data / name).write_text(text.replace("verifiers_agent", "echo_match_simple_agent"))
    return data


def _submit(capsys: pytest.CaptureFixture[str], pkg: Path, data: Path,
            *extra: str) -> tuple[int, str, str]:
    rc = main(["submit", str(JOB), "--env", str(pkg), "--dataset", str(data),
               "--base-url", _closed_url(), *extra])
    out, err = capsys.readouterr()
    return rc, out, err


def test_rejected_inputs_are_exit_1_with_the_diagnostics_and_no_connection(capsys, dataset):
    rc, out, err = _submit(capsys, EK200, dataset)
    assert rc == 1 and "EK200" in err and "nothing was uploaded" in err
    error = _shaped(out, "error")
    assert error["error"]["kind"] == "invalid"
    assert {d["code"] for d in error["diagnostics"]} >= {"EK200"}
    assert "cannot reach" not in err  # the platform was never asked


def test_selectors_reach_the_gate_then_the_platform_is_asked(capsys, dataset):
    rc, out, err = _submit(capsys, EK200, dataset, "--extend-ignore", "EK200", "-q")
    assert rc == 1 and "cannot reach NeMo Platform" in err and "EK200" not in err
    assert _shaped(out, "error")["error"]["type"] == "PlatformError"


def test_the_configuration_file_is_read_as_validate_reads_it(capsys, dataset, tmp_path):
    pkg = tmp_path / "pkg"
    shutil.copytree(EK200, pkg)
    (tmp_path / "envkit.toml").write_text('extend-ignore = ["EK200"]\n')
    rc, _, err = _submit(capsys, pkg, dataset, "--output-format", "human")
    assert rc == 1 and "cannot reach NeMo Platform" in err
    rc, _, err = _submit(capsys, pkg, dataset, "--isolated")
    assert rc == 1 and "EK200" in err


def test_an_unknown_selector_is_a_usage_error(capsys, dataset):
    rc, out, _ = _submit(capsys, VALID, dataset, "--select", "EK9999")
    assert rc == 2 and _shaped(out, "error")["error"]["kind"] == "usage"


def test_without_the_platform_extra_valid_inputs_name_the_install_line(capsys, dataset,
                                                                     monkeypatch):
    monkeypatch.setitem(extras.EXTRAS, "platform", ("httpx", "envkit_no_such_module"))
    rc, out, err = _submit(capsys, VALID, dataset)
    assert rc == 2 and extras.install_hint("platform") in err  # this checkout's install line
    assert _shaped(out, "error")["error"]["kind"] == "missing-extra"
    rc, _, err = _submit(capsys, EK200, dataset)  # bad inputs: those first
    assert rc == 1 and "EK200" in err and "pip install" not in err
    assert main(["job", "status", "rl-x"]) == 2
    assert extras.install_hint("platform") in capsys.readouterr().err


class _Jobs(http.server.BaseHTTPRequestHandler):
    """The customization service's job routes, answering with one fixed job."""

    seen: ClassVar[list[str]] = []

    def _reply(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        _Jobs.seen.append(f"GET {self.path}")
        if "/logs" in self.path:
            self._reply({"data": [{"timestamp": "t1", "job_step": "training",
                                   "message": "step 1"}], "next_page": None})
        else:
            self._reply(STATUS)

    def do_POST(self) -> None:
        _Jobs.seen.append(f"POST {self.path}")
        self._reply({"status": "cancelling"})

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def jobs_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Jobs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Jobs.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _job(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    rc = main(["job", *args, "--base-url", url, "--workspace", "ws"])
    out, err = capsys.readouterr()
    return rc, out, err


def test_job_json_outputs_follow_the_shipped_schema(capsys, jobs_url, tmp_path):
    rc, out, _ = _job(capsys, jobs_url, "status", "rl-x")
    reply = _shaped(out, "job-output")
    assert rc == 0 and reply["reply"]["status"] == "running" and reply["workspace"] == "ws"
    rc, out, _ = _job(capsys, jobs_url, "cancel", "rl-x")
    assert rc == 0 and _shaped(out, "job-output")["reply"] == {"status": "cancelling"}
    assert "POST /apis/customization/v2/workspaces/ws/rl/jobs/rl-x/cancel" in _Jobs.seen
    rc, out, err = _job(capsys, jobs_url, "metrics", "rl-x", "--format", "json", "-o",
                        str(tmp_path / "m"))
    metrics = _shaped(out, "job-output")
    assert metrics["records"] == [{"step": 1, "train_reward": 0.25, "val_accuracy": 0.5}]
    assert (tmp_path / "m" / "metrics.jsonl").is_file() and "wrote" in err
    rc, out, _ = _job(capsys, jobs_url, "logs", "rl-x", "--output-format", "json")
    assert rc == 0 and _shaped(out, "job-output")["lines"][0]["message"] == "step 1"


def test_job_human_outputs(capsys, jobs_url):
    rc, out, _ = _job(capsys, jobs_url, "status", "rl-x", "--output-format", "human")
    assert rc == 0 and out.startswith("rl-x: status running  step training  training step 1")
    rc, out, _ = _job(capsys, jobs_url, "logs", "rl-x", "--tail", "5")
    assert rc == 0 and out == "t1 training: step 1\n"
    assert any("tail=5" in s for s in _Jobs.seen)
    rc, out, _ = _job(capsys, jobs_url, "metrics", "rl-x")
    assert rc == 0 and "train_reward" in out and "0.25" in out


def test_every_job_option_has_help() -> None:
    from envkit.cli.job import job_group
    from envkit.cli.submit import submit_command

    commands = [submit_command, *job_group.commands.values()]
    for command in commands:
        for param in command.params:
            if param.param_type_name == "option":
                assert param.help, f"{command.name} {param.opts}"  # type: ignore[attr-defined]
        names = {o for p in command.params for o in getattr(p, "opts", ())}
        assert {"-q", "-v", "--output-format"} <= names, command.name
