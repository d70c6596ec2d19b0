"""`envkit smoke` without Gym: the scripted policy endpoint, rows, diagnosis, isolation, the
report's JSON shape, and the static gate that stops a run before any venv is built."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import jsonschema
import pytest
from support.paths import REPO_ROOT

from envkit.gym import Where, diagnose
from envkit.policy_server.scripted import ScriptedBackend
from envkit.policy_server.server import PolicyServer
from envkit.schemas import load_schema
from envkit.smoke.isolation import offline_network
from envkit.smoke.rows import SMOKE_PROMPT, dataset_rows, rows_for, scripted_answers

ROOT = REPO_ROOT
MESSAGES = [{"role": "system", "content": "be brief"},
            {"role": "user", "content": "What is 3 + 5?"}]


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


@pytest.fixture
def policy():
    backend = ScriptedBackend("fixed", {"What is 3 + 5?": "8"})
    with PolicyServer(backend) as server:
        yield server, backend


def test_chat_completion_carries_what_vllm_model_needs(policy) -> None:
    """Gym's vllm_model (return_token_id_information) asks for logprobs as token ids and reads
    prompt_token_ids + choices[].token_ids; they must agree with the logprob tokens."""
    server, backend = policy
    out = _post(f"{server.base_url}/chat/completions", {
        "model": backend.model_name, "messages": MESSAGES, "logprobs": True, "top_logprobs": 0,
        "return_tokens_as_token_ids": True})
    choice = out["choices"][0]
    assert choice["message"]["content"] == "8"  # row-derived: the prompt's expected answer
    assert choice["token_ids"] == list(b"8")
    assert [c["token"] for c in choice["logprobs"]["content"]] == [f"token_id:{t}"
                                                                   for t in b"8"]
    assert all(c["logprob"] == 0.0 for c in choice["logprobs"]["content"])
    assert out["prompt_token_ids"] == backend.encode_prompt(MESSAGES)
    assert backend.requests == 1


def test_fixed_completion_truncation_and_tokenize(policy) -> None:
    server, backend = policy
    other = [{"role": "user", "content": [{"type": "input_text", "text": "unknown"}]}]
    out = _post(f"{server.base_url}/chat/completions",
                {"messages": other, "max_tokens": 3, "logprobs": True})
    choice = out["choices"][0]
    assert choice["message"]["content"] == "fix"
    assert choice["finish_reason"] == "length"
    tok = _post(server.base_url.removesuffix("/v1") + "/tokenize", {"messages": other})
    assert tok["tokens"] == backend.encode_prompt(other)
    comp = _post(f"{server.base_url}/completions", {"prompt": "hi", "logprobs": 1})
    assert comp["choices"][0]["text"] == "fixed"


def test_rows_from_dataset_and_minimal_rows(tmp_path: Path) -> None:
    rows = [{"responses_create_params": {"input": f"q{i}"}, "expected_answer": i,
             "agent_ref": {"type": "responses_api_agents", "name": "a" if i < 3 else "b"}}
            for i in range(5)]
    (tmp_path / "training.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows)
                                             + "not json\n")
    found = dataset_rows(tmp_path, 2)
    assert {k: len(v) for k, v in found.items()} == {"a": 2, "b": 2}
    assert scripted_answers(found["a"]) == {"q0": "0", "q1": "1"}
    three = rows_for("a", found["a"], 3)
    assert [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in three] == [(0, 0), (1, 0),
                                                                             (0, 1)]
    minimal = rows_for("c", [], 1)[0]
    assert minimal["agent_ref"]["name"] == "c"
    assert minimal["responses_create_params"]["input"][0]["content"] == SMOKE_PROMPT


@pytest.mark.parametrize(("text", "offline", "code"), [
    ("ModuleNotFoundError: No module named 'cgi'", False, "EK406"),
    ("ModuleNotFoundError: No module named 'telnetlib.x'", True, "EK406"),
    ("ModuleNotFoundError: No module named 'rapidfuzz'", False, "EK403"),
    ("urllib.error.URLError: <urlopen error [Errno 101] Network is unreachable>", True, "EK703"),
    ("socket.gaierror: [Errno -3] Temporary failure in name resolution", True, "EK703"),
    ("RuntimeError: Timed out after 30s waiting for Gym servers to become ready: slow", False,
     "EK701"),
    ("reward\n  Input should be a valid number, unable to parse string", False, "EK702"),
    ("Requires-Python >=3.13.14\n(graded) | reward\n(graded) |   Input should be a valid number",
     False, "EK702"),
    ('Response content: "1 error\\nreward\\n  Input should be a valid number', False, "EK702"),
])
def test_diagnosis(text: str, offline: bool, code: str) -> None:
    assert diagnose(text, Where.START, offline=offline).code == code


def test_a_ray_start_timeout_is_the_hosts_problem() -> None:
    """Ray's fixed 30 s for its raylet ran out twice (a busy machine): no package rule."""
    text = ("Exception: The current node timed out during startup. This could happen because "
            "some of the raylet failed to startup or the GCS has become overloaded.")
    found = diagnose(text, Where.START)
    assert found.code is None
    assert "overloaded" in found.reason and "timed out during startup" in found.evidence


def test_network_error_without_offline_is_not_an_offline_finding() -> None:
    assert diagnose("Network is unreachable", Where.START, offline=False).code != "EK703"


def test_rollout_diagnosis() -> None:
    bad = diagnose("no numeric `reward` in the answer: 'high'", Where.ROLLOUT)
    assert bad.code == "EK702"
    assert diagnose("HTTP 500 from http://x/run: boom", Where.ROLLOUT).code == "EK704"
    # install chatter in every server log is no rollout finding (uv's Requires-Python note)
    noisy = "HTTP 500 from http://x/run: boom\nwarning: Requires-Python >=3.13.14"
    assert diagnose(noisy, Where.ROLLOUT).code == "EK704"
    late = "HTTP 500 from http://x/run\nModuleNotFoundError: No module named 'rapidfuzz'"
    assert diagnose(late, Where.ROLLOUT).code == "EK403"


def _connects(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError:
        return False
    return True


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace needs root here")
def test_offline_namespace_has_loopback_only_and_is_left_again() -> None:
    with socket.socket() as outside:
        outside.bind(("127.0.0.1", 0))
        outside.listen()
        port = outside.getsockname()[1]
        with offline_network() as iso:
            assert iso.kind == "netns"
            assert "ENETUNREACH" in iso.detail
            assert not _connects("127.0.0.1", port)  # the host's loopback is another one
            with socket.socket() as inside:
                inside.bind(("127.0.0.1", 0))
                inside.listen()
                assert _connects("127.0.0.1", inside.getsockname()[1])
        assert _connects("127.0.0.1", port)  # back in the host namespace


def test_offline_proxy_fallback_refuses_and_records(monkeypatch) -> None:
    monkeypatch.setenv("ENVKIT_SMOKE_ISOLATION", "proxy")
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    with offline_network() as iso:
        assert iso.kind == "proxy"
        assert os.environ["HTTP_PROXY"].startswith("http://127.0.0.1:")
        with pytest.raises(urllib.error.HTTPError) as info:
            # a fresh opener reads the proxy variables (urlopen's cached one would not)
            urllib.request.build_opener().open("http://example.org/data.bin", timeout=10)
        assert info.value.code == 403
        info.value.close()
    assert iso.refused == ["example.org"]
    assert "HTTP_PROXY" not in os.environ or not os.environ["HTTP_PROXY"].startswith(
        "http://127.0.0.1:")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envkit", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=ROOT)


@pytest.mark.parametrize("command", [["smoke"], ["validate", "--smoke"]])
def test_static_errors_stop_the_run_before_any_server(command: list[str]) -> None:
    pkg = ROOT / "fixtures/packages/EK310-missing-entrypoint/pkg"
    proc = _cli(*command, str(pkg), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    jsonschema.validate(report, load_schema("smoke"))
    assert report["version"] == "2.0"
    assert report["stage"] == "validate"
    assert report["passed"] is False
    assert "EK310" in report["codes"]
    assert report["servers"] == []
    assert report["diagnostics"] == []  # nothing was spun up
    jsonschema.validate(report["static"], load_schema("diagnostics"))
    assert any(d["code"] == "EK310" for d in report["static"]["diagnostics"])
    (static,) = report["static"]["packages"]
    assert static["path"] == str(pkg)
    assert static["target_source"] == "default"


def test_static_errors_human_and_github() -> None:
    pkg = ROOT / "fixtures/packages/EK310-missing-entrypoint/pkg"
    human = _cli("smoke", str(pkg))
    assert human.returncode == 1
    assert "EK310" in human.stdout
    assert "failed: smoke (validate)" in human.stdout
    gh = _cli("smoke", str(pkg), "--output-format", "github")
    assert gh.stdout.startswith("::error file=")
    assert "EK310" in gh.stdout


def test_static_errors_sarif() -> None:
    pkg = ROOT / "fixtures/packages/EK310-missing-entrypoint/pkg"
    proc = _cli("smoke", str(pkg), "--output-format", "sarif")
    assert proc.returncode == 1, proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    assert "EK310" in {r["ruleId"] for r in run["results"]}


def test_usage_errors_exit_2() -> None:
    assert _cli("smoke").returncode == 2
    assert _cli("smoke", "/nonexistent").returncode == 2
    assert _cli("validate", "--dataset", str(ROOT / "fixtures/packages/valid-dataset"),
                "--smoke").returncode == 2
    two = _cli("validate", "--smoke", str(ROOT / "fixtures/packages/valid-wheels-v1/pkg"),
               str(ROOT / "fixtures/packages/EK310-missing-entrypoint/pkg"), "--format", "json")
    assert two.returncode == 2
    assert json.loads(two.stdout)["error"]["kind"] == "usage"
    typo = _cli("validate", "--smoke", "--select", "EK9Z",
                str(ROOT / "fixtures/packages/valid-wheels-v1/pkg"))
    assert typo.returncode == 2 and "Traceback" not in typo.stderr


@pytest.mark.parametrize("code", ["EK701", "EK702", "EK703", "EK704"])
def test_spin_up_codes_are_rules(code: str) -> None:
    proc = _cli("rule", code)
    assert proc.returncode == 0, proc.stderr
    assert f"({code})" in proc.stdout
    assert "## Why is this bad?" in proc.stdout and "## How to fix" in proc.stdout


def test_smoke_json_schema_is_registered() -> None:
    from envkit.output.render import schema_for
    from envkit.schemas import SCHEMAS
    from envkit.smoke.report import SmokeOutcome

    assert schema_for(SmokeOutcome) == "smoke"
    assert "smoke" in SCHEMAS
    assert json.loads(_cli("schema", "smoke").stdout)["title"]


def test_pre_commit_smoke_hook_and_documented_cache_key() -> None:
    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    hook = hooks["envkit-smoke"]
    assert hook["entry"] == "envkit smoke"
    assert hook["pass_filenames"] is False
    assert "pre-push" in hook["stages"]
    doc = (ROOT / "docs" / "ci.md").read_text()
    assert "envkit smoke pkg/ --offline --output-format github" in doc
    assert "envkit-cache/wheels" in doc and "hashFiles('pkg/**')" in doc
    for venvs in ("server-venvs", "gym-venvs"):  # a restored venv is code no hash vouches for
        assert "${{ runner.temp }}/envkit-cache/" + venvs not in doc
    assert ".envkit-cache" not in doc  # the cache lives outside the checkout


@pytest.mark.parametrize(("args", "lock", "target", "source"), [
    (["--arch", "aarch64"], None, "aarch64", "command line"),
    ([], "cp313-manylinux_2_28_aarch64", "aarch64", "wheels.lock"),
    ([], None, "x86_64", "default"),
])
def test_smoke_picks_the_target_as_validate_does(tmp_path: Path, args: list[str],
                                                 lock: str | None, target: str,
                                                 source: str) -> None:
    """The static pass is validate's gate: the target comes from the flags, else the
    package's wheels.lock, and the JSON says which (issue: it said "default" after --arch)."""
    import shutil

    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "fixtures/packages/EK310-missing-entrypoint/pkg", pkg)
    if lock:
        (pkg / "wheels.lock").write_text(json.dumps({"target": lock}))
    proc = _cli("smoke", str(pkg), "--format", "json", *args)
    assert proc.returncode == 1, proc.stderr
    (static,) = json.loads(proc.stdout)["static"]["packages"]
    assert static["path"] == str(pkg)
    assert target in static["target"]
    assert static["target_source"] == source
    validate = json.loads(_cli("validate", str(pkg), "--format", "json", *args).stdout)
    assert validate["packages"][0]["target_source"] == source
