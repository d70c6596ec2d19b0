"""``envkit submit`` and ``envkit job`` against the real NeMo Platform services (0.6.0).

e2e mode runs the whole job lifecycle without a cluster; default mode ends every valid GRPO
submit in the platform's own 422. The char_pattern wheels-v1 package (~400 MB) is built once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from support.paths import REPO_ROOT
from support.platform_services import (
    CountingProxy,
    create_workspace,
    register_model,
    running_services,
)
from toy_envs import char_pattern_rows, write_dataset

from envkit.platform import PlatformError
from envkit.schemas import load_schema
from envkit.supply.wheelcache import link_wheels

pytestmark = [pytest.mark.platform, pytest.mark.network]

ROOT = REPO_ROOT
JOB = ROOT / "examples" / "tiny_grpo.json"
MODEL = "tiny-char-model"  # examples/tiny_grpo.json names default/tiny-char-model


def envkit(*args: str, url: str, check: bool = False,
           **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NMP_BASE_URL": url}
    env.pop("NMP_ACCESS_TOKEN", None)
    proc = subprocess.run([sys.executable, "-m", "envkit", *args], capture_output=True,
                          text=True, env=env, timeout=600, **kwargs)  # type: ignore[call-overload]
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def e2e(tmp_path_factory: pytest.TempPathFactory):
    with running_services(tmp_path_factory.mktemp("nmp-e2e"), "e2e") as url:
        register_model(url, "default", MODEL)
        yield url


@pytest.fixture(scope="module")
def char_pkg(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("char")
    src = ROOT / "fixtures" / "gym_trees" / "resources_servers" / "char_pattern"
    subprocess.run([sys.executable, "-m", "envkit", "build", str(src), "--format", "wheels-v1",
                    "--arch", "x86_64", "-o", str(root / "pkg")], check=True,
                   capture_output=True)
    data = write_dataset(root / "data", char_pattern_rows(16, chars="a"))
    return root / "pkg", data


def _shaped(stdout: str, schema: str) -> dict:
    """The command's JSON output, checked against the schema ``envkit schema`` ships."""
    data = json.loads(stdout)
    Draft202012Validator(load_schema(schema)).validate(data)
    return data


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


def _filesets(url: str, workspace: str = "default") -> set[str]:
    names, page = set(), 1
    while True:
        base = f"{url}/apis/files/v2/workspaces/{workspace}/filesets"
        body = _get(f"{base}?page={page}&page_size=100")
        names |= {f["name"] for f in body["data"]}
        if len(body["data"]) < 100:
            return names
        page += 1


def _fileset(url: str, ref: str) -> dict:
    ws, name = ref.split("/")
    return _get(f"{url}/apis/files/v2/workspaces/{ws}/filesets/{name}")


def _patch(url: str, body: dict) -> None:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="PATCH",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=30).close()


def test_submit_wait_completes_and_metrics_match_a_local_run(e2e, char_pkg, tmp_path):
    pkg, data = char_pkg
    out = tmp_path / "result"
    proc = envkit("submit", str(JOB), "--env", str(pkg), "--dataset", str(data), "--offline",
                  "--wait", "-o", str(out), url=e2e)
    assert proc.returncode == 0, proc.stderr
    result = _shaped(proc.stdout, "submit")
    assert result["created"] is True and result["final_status"]["status"] == "completed"
    assert sorted(Path(p).name for p in result["written"]) == ["metrics.jsonl"]
    job = result["job"]
    assert job["status"] == "created" and result["name"] == job["name"]
    assert job["spec"]["environment"].startswith("default/char-pattern-")
    assert job["spec"]["dataset"].startswith("default/data-")
    reply = _shaped(envkit("job", "status", job["name"], url=e2e, check=True).stdout, "job-output")
    status = reply["reply"]
    assert reply["command"] == "status" and status["status"] == "completed"
    assert [s["status"] for s in status["steps"]] == ["completed"] * 4
    for args in ((), ("--tail", "5")):  # the e2e backend writes no log lines; the route works
        logs = envkit("job", "logs", job["name"], *args, "--output-format", "json", url=e2e,
                      check=True)
        assert _shaped(logs.stdout, "job-output")["lines"] == []
    waited = envkit("job", "wait", job["name"], "-q", url=e2e, check=True)
    assert waited.stdout.startswith(f"{job['name']}: status completed") and not waited.stderr
    env = _fileset(e2e, job["spec"]["environment"])
    assert env["purpose"] == "environment" and env["custom_fields"]["envkit_complete"] is True
    assert env["metadata"]["environment"]["format"] == "wheels-v1"

    series = {"train_reward": [{"step": s, "epoch": 0, "value": s / 10} for s in (1, 2, 3)],
              "val_accuracy": [{"step": 3, "epoch": 0, "value": 0.5}]}
    _patch(f"{e2e}/apis/jobs/v2/workspaces/default/jobs/{job['name']}/status-details",
           {"metrics": series})
    table = envkit("job", "metrics", job["name"], "-o", str(tmp_path / "m"), url=e2e, check=True)
    assert "train_reward" in table.stdout and "0.3" in table.stdout
    as_json = envkit("job", "metrics", job["name"], "--format", "json", url=e2e, check=True)
    assert _shaped(as_json.stdout, "job-output")["records"][-1]["val_accuracy"] == 0.5
    records = [json.loads(x) for x in (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()]
    assert records == [{"step": 1, "train_reward": 0.1}, {"step": 2, "train_reward": 0.2},
                       {"step": 3, "train_reward": 0.3, "val_accuracy": 0.5}]
    # The same reader and the same plotting function as a local `envkit train` run.
    from envkit.trainer.metrics import read_metrics

    assert read_metrics(tmp_path / "m" / "metrics.jsonl") == records
    assert (tmp_path / "m" / "reward_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_resubmit_sends_nothing_and_creates_no_fileset(e2e, char_pkg):
    pkg, data = char_pkg
    envkit("submit", str(JOB), "--env", str(pkg), "--dataset", str(data), "--offline",
           url=e2e, check=True)
    before = _filesets(e2e)
    proxy = CountingProxy(e2e)
    try:
        start = time.monotonic()
        proc = envkit("submit", str(JOB), "--env", str(pkg), "--dataset", str(data),
                      "--offline", url=proxy.url, check=True)
        elapsed = time.monotonic() - start
    finally:
        proxy.close()
    assert proxy.puts(ok_only=False) == []
    assert not [p for m, p, _ in proxy.log if m == "POST" and "/filesets" in p]
    assert "sent 0 files, 0.0 MB" in proc.stderr
    new = _filesets(e2e) - before
    assert all(n.startswith("job-fileset-") for n in new), new  # only the job's own FileSet
    print(f"resubmit of unchanged content: {elapsed:.2f} s (whole command)")


def test_sigkill_mid_upload_then_rerun_resends_nothing_already_there(e2e, char_pkg, tmp_path):
    pkg, data = char_pkg
    create_workspace(e2e, "killtest")
    register_model(e2e, "killtest", MODEL)
    args = ["submit", str(JOB), "--env", str(pkg), "--dataset", str(data), "--offline",
            "--workspace", "killtest", "--model", f"killtest/{MODEL}"]
    slow = CountingProxy(e2e, put_delay=0.1)
    env = {**os.environ, "NMP_BASE_URL": slow.url}
    log = (tmp_path / "killed.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "envkit", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 120
        while len(slow.puts()) < 40 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.5)
    finally:
        slow.close()
        log.close()
    first = set(slow.puts())
    files = sum(1 for p in pkg.rglob("*") if p.is_file())  # 190 with provenance.json
    assert 40 <= len(first) < files, (tmp_path / "killed.log").read_text()[-2000:]
    env_name = next(n for n in _filesets(e2e, "killtest") if n.startswith("char-pattern-"))
    assert _fileset(e2e, f"killtest/{env_name}")["custom_fields"]["envkit_complete"] is False

    proxy = CountingProxy(e2e)
    try:
        rerun = envkit(*args, url=proxy.url)
    finally:
        proxy.close()
    assert rerun.returncode == 0, rerun.stderr
    second = proxy.puts()
    assert not first & set(second), sorted(first & set(second))[:3]
    assert len(first) + len([p for p in second if env_name in p]) == files
    assert _fileset(e2e, f"killtest/{env_name}")["custom_fields"]["envkit_complete"] is True


def _echo_match_dataset(data: Path) -> Path:
    """valid-dataset's rows, addressed to valid-wheels-v1's agent (the submit checks need a
    dataset FileSet whose rows name an agent of the package)."""
    data.mkdir()
    for name in ("training.jsonl", "validation.jsonl"):
        text = (ROOT / "fixtures" / "packages" / "valid-dataset" / "data" / name).read_text()
        (data / name).write_text(text.replace("verifiers_agent", "echo_match_simple_agent"))
    return data


@pytest.fixture(scope="module")
def default_platform(tmp_path_factory: pytest.TempPathFactory):
    with running_services(tmp_path_factory.mktemp("nmp-default"), "default") as url:
        register_model(url, "default", MODEL)
        yield url


def test_default_mode_422_is_one_line_with_the_platform_detail(default_platform, tmp_path):
    pkg = ROOT / "fixtures" / "packages" / "valid-wheels-v1" / "pkg"
    data = _echo_match_dataset(tmp_path / "data")
    proc = envkit("submit", str(JOB), "--env", str(pkg), "--dataset", str(data),
                  url=default_platform)
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: HTTP 422") and "kubernetes" in last, proc.stderr
    error = _shaped(proc.stdout, "error")["error"]
    assert error["kind"] == "failed" and error["type"] == "PlatformError"
    assert "Traceback" not in proc.stderr


def test_a_package_envkit_rejects_is_never_uploaded(default_platform):
    pkg = ROOT / "fixtures" / "packages" / "EK200-jsonl-in-package" / "pkg"
    data = ROOT / "fixtures" / "packages" / "valid-dataset" / "data"
    before = _filesets(default_platform)
    proc = envkit("submit", str(JOB), "--env", str(pkg), "--dataset", str(data),
                  url=default_platform)
    assert proc.returncode == 1
    assert "EK200" in proc.stderr and "nothing was uploaded" in proc.stderr
    error = _shaped(proc.stdout, "error")
    assert error["error"]["kind"] == "invalid" and error["diagnostics"][0]["code"] == "EK200"
    assert _filesets(default_platform) == before


def test_missing_model_and_a_taken_job_name_are_one_line_errors(e2e, tmp_path):
    pkg = ROOT / "fixtures" / "packages" / "valid-wheels-v1" / "pkg"
    data = _echo_match_dataset(tmp_path / "data")
    base = ["submit", str(JOB), "--env", str(pkg), "--dataset", str(data)]
    missing = envkit(*base, "--model", "default/no-such-model", url=e2e)
    assert missing.returncode == 1 and _shaped(missing.stdout, "error")["error"]["kind"] == "failed"
    assert missing.stderr.strip().splitlines()[-1].count("Model entity not found") == 1
    first = envkit(*base, "--name", "rl-taken", url=e2e, check=True)
    again = envkit(*base, "--name", "rl-taken", url=e2e, check=True)  # a retry attaches
    assert _shaped(again.stdout, "submit")["job"]["id"] == json.loads(first.stdout)["job"]["id"]
    assert json.loads(again.stdout)["created"] is False
    assert "attached to existing job default/rl-taken" in again.stderr
    register_model(e2e, "default", "other-model")
    clash = envkit(*base, "--name", "rl-taken", "--model", "default/other-model", url=e2e)
    assert clash.returncode == 1 and "Traceback" not in clash.stderr
    assert "already exists with other model/dataset/environment" in clash.stderr


def test_ctrl_c_and_a_vanished_file_mid_upload_leave_nothing_marked_complete(e2e, char_pkg,
                                                                             tmp_path):
    from envkit.platform import resolve_connection
    from envkit.platform.http import PlatformClient
    from envkit.platform.progress import CountingProgress
    from envkit.platform.submit import publish_package

    pkg, data = char_pkg
    create_workspace(e2e, "inttest")
    slow = CountingProxy(e2e, put_delay=0.1)
    env = {**os.environ, "NMP_BASE_URL": slow.url}
    proc = subprocess.Popen([sys.executable, "-m", "envkit", "submit", str(JOB), "--env",
                             str(pkg), "--dataset", str(data), "--workspace", "inttest"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while len(slow.puts()) < 10 and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        slow.close()
    assert proc.returncode == 1 and "Traceback" not in err
    assert _shaped(out, "error")["error"]["type"] == "UploadInterrupted"
    assert err.strip().splitlines()[-1].startswith("error: interrupted during upload")
    name = next(n for n in _filesets(e2e, "inttest") if n.startswith("char-pattern-"))
    assert _fileset(e2e, f"inttest/{name}")["custom_fields"]["envkit_complete"] is False

    # A file that vanishes between hashing and sending: one line, still not complete.
    copy = tmp_path / "pkg"
    shutil.copytree(pkg, copy, copy_function=link_wheels)  # the wheels symlinked: ~300 MB
    from envkit.platform import submit as submit_mod

    real_scan = submit_mod.scan_tree

    def scan_then_lose_a_wheel(root, purpose):  # the disk fault happens after the hash
        tree = real_scan(root, purpose)
        sorted((root / "wheels").glob("*.whl"))[-1].unlink()  # not sent before the Ctrl-C
        return tree

    submit_mod.scan_tree = scan_then_lose_a_wheel
    client = PlatformClient(resolve_connection(e2e, "inttest"))
    try:
        with pytest.raises(PlatformError) as exc:
            publish_package(client, "inttest", copy, CountingProgress())
    finally:
        submit_mod.scan_tree = real_scan
        client.close()
    assert "mid-upload" in str(exc.value) and "\n" not in str(exc.value)
    assert _fileset(e2e, f"inttest/{name}")["custom_fields"]["envkit_complete"] is False


def test_build_upload_prints_the_refs_of_complete_filesets(e2e, tmp_path):
    src = ROOT / "fixtures" / "gym_trees" / "resources_servers" / "char_pattern"
    proc = envkit("build", str(src), "--format", "native-v1", "-o", str(tmp_path / "pkg"),
                  "--upload", url=e2e)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["valid"] is True
    ref = next(line.rsplit(": ", 1)[1] for line in proc.stderr.splitlines()
               if line.startswith("envkit: environment FileSet: "))
    assert ref.startswith("default/char-pattern-")
    body = _fileset(e2e, ref)
    assert body["custom_fields"]["envkit_complete"] is True
    assert body["metadata"]["environment"]["format"] == "native-v1"


def test_job_show_returns_the_provenance_submit_attached(e2e, char_pkg):
    pkg, data = char_pkg
    built = json.loads((pkg / "provenance.json").read_text())  # written by `envkit build`
    submitted = envkit("submit", str(JOB), "--env", str(pkg), "--dataset", str(data),
                       "--offline", url=e2e, check=True)
    name = json.loads(submitted.stdout)["name"]
    shown = _shaped(envkit("job", "show", name, "--output-format", "json", url=e2e,
                           check=True).stdout, "job-output")
    record = shown["provenance"]
    Draft202012Validator(load_schema("provenance")).validate(record)
    assert shown["job"]["custom_fields"]["envkit_provenance"] == record  # kept by the platform
    assert record["package"]["sha256"] == built["package"]["sha256"]
    assert record["lock"] == built["lock"]
    assert record["lock"]["target"].startswith("cp313-manylinux_")  # `--arch x86_64`
    assert record["lock"]["target"].endswith("_x86_64")
    assert record["closure"] == {"nemo-gym": "0.7.0", "verifiers": None}
    assert record["job"]["sha256"] == hashlib.sha256(JOB.read_bytes()).hexdigest()
    dataset = _fileset(e2e, shown["job"]["spec"]["dataset"])
    assert record["dataset"]["sha256"] == dataset["custom_fields"]["envkit_tree_sha256"]
    human = envkit("job", "show", name, url=e2e, check=True).stdout
    assert "provenance" in human and record["package"]["sha256"] in human
