"""End-to-end ``envkit convert verifiers`` on the fixture envs that must end a particular way
(slow: uv builds and resolutions against PyPI, a throwaway venv per closure).

Every failure case asserts the exact outcome: exit 1, a message naming the real cause, and no
output directory (nor its parent, nor a temp dir) afterwards. Run this file on its own.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tarfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from wheelfactory import make_wheel

from envkit.converters.env_source import build_source

pytestmark = pytest.mark.network

ROOT = REPO_ROOT
ENVS = ROOT / "fixtures" / "verifiers_envs"
SECRET = "sk-envkit-fixture-0123456789"


def _convert(tmp_path: Path, hub_id: str, *extra: str,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "envkit", "convert", "verifiers", "--hub-id", hub_id,
           "--out-dir", str(tmp_path / "out" / "pkg"),
           "--dataset-dir", str(tmp_path / "out" / "data"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False,
                          env={**os.environ, **(env or {})})


def _refused(proc: subprocess.CompletedProcess[str], tmp_path: Path) -> dict:
    assert proc.returncode == 1, proc.stderr[-3000:]
    verdict = json.loads(proc.stdout)
    assert verdict["valid"] is False and verdict.get("package") is None
    assert not (tmp_path / "out").exists()
    return verdict["error"]


def _lock(tmp_path: Path) -> dict[str, dict]:
    lock = json.loads((tmp_path / "out" / "pkg" / "wheels.lock").read_text())
    return {w["name"]: w for w in lock["wheels"]}


def _rows(tmp_path: Path) -> list[dict]:
    text = (tmp_path / "out" / "data" / "training.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def broken_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_source(ENVS / "broken", tmp_path_factory.mktemp("broken"))


# -- refused before anything is resolved or run ---------------------------------------------

def test_old_pin_is_refused_naming_pin_and_harness(tmp_path: Path) -> None:
    error = _refused(_convert(tmp_path, "envkit/old-pin", "--source", str(ENVS / "old-pin")),
                     tmp_path)
    assert "pins an older verifiers ('verifiers==0.1.5')" in error["message"]
    assert "Gym 0.7.0's verifiers_agent runs verifiers 0.3.1" in error["message"]


def test_verifiers_0_4_env_is_told_there_is_no_route_yet(tmp_path: Path) -> None:
    proc = _convert(tmp_path, "envkit/v1-taskset", "--source", str(ENVS / "v1-taskset"))
    error = _refused(proc, tmp_path)
    assert ("is written for the verifiers v1 API (it requires 'verifiers>=0.4'): verifiers 0.4 "
            "removed the classic API (vf.load_environment, Environment.run_group) that Gym "
            "0.7.0's verifiers_agent calls (it runs verifiers 0.3.1)") in error["message"]
    assert "no conversion route yet" in error["hint"] and "use a release" not in error["hint"]
    assert "resolving" not in proc.stderr


def test_requires_python_is_refused_before_resolution(tmp_path: Path) -> None:
    proc = _convert(tmp_path, "envkit/py312-only", "--source", str(ENVS / "py312-only"))
    error = _refused(proc, tmp_path)
    assert "Requires-Python '<3.13,>=3.10'" in error["message"]
    assert "resolving" not in proc.stderr  # no resolution, no load


# -- load failures, by cause ---------------------------------------------------------------

@pytest.mark.parametrize(("module", "text"), [
    ("lost-api", "imports 'parse_response_messages' from 'verifiers."),
    ("lost-attr", "'lost_attr' uses 'SelectConfig' from 'verifiers.legacy', which verifiers "
                  "0.3.1 does not have (at lost_attr/__init__.py:8)"),
    ("missing-dep", "imports 'envkit_undeclared_dependency', which no installed distribution"),
    ("needs-network", "needs the network at load: datasets.envkit-fixture.invalid"),
])
def test_load_failure_names_its_cause(tmp_path: Path, broken_wheel: Path, module: str,
                                      text: str) -> None:
    error = _refused(_convert(tmp_path, f"envkit/{module}", "--wheel", str(broken_wheel)),
                     tmp_path)
    assert text in error["message"]
    assert error["message"].count("\n") == 0
    if module in ("lost-api", "lost-attr"):
        assert "which verifiers 0.3.1 does not have" in error["message"]
        assert "an API of another verifiers release" in error["hint"]
        assert "written for verifiers 0.3.1" in error["hint"]


def test_v1_env_behind_a_load_environment_shim_is_v1(tmp_path: Path) -> None:
    """The shim returns verifiers 0.3.1's v1 SingleAgentEnv: refused as v1 by where its class
    comes from, not failing with "'SingleAgentEnv' object has no attribute 'get_dataset'"."""
    error = _refused(_convert(tmp_path, "envkit/v1-shim", "--source", str(ENVS / "v1-shim")),
                     tmp_path)
    assert error["message"] == (
        "loading 'v1-shim' failed: load_environment returned a SingleAgentEnv, a verifiers v1 "
        "class (verifiers.v1.envs.single_agent.env.SingleAgentEnv), not a classic verifiers "
        "Environment")
    assert "must return a classic vf.Environment" in error["hint"]


def test_module_the_build_leaves_out_points_at_the_build_config(tmp_path: Path) -> None:
    error = _refused(_convert(tmp_path, "envkit/left-out", "--source", str(ENVS / "left-out")),
                     tmp_path)
    assert error["message"] == (
        "loading 'left-out' failed: 'left_out' imports 'left_out_prompts', which is in the "
        "source tree (left_out_prompts.py) but not in the wheel its build makes "
        "(left_out-0.1.0-py3-none-any.whl) (at left_out.py:8)")
    assert "include it with [tool.setuptools] packages / py-modules" in error["hint"]
    assert "Requires-Dist" not in error["hint"]


# -- secrets ---------------------------------------------------------------------------------

def test_env_reference_converts_and_the_secret_stays_out(tmp_path: Path) -> None:
    proc = _convert(tmp_path, "envkit/secret-echo", "--source", str(ENVS / "secret-echo"),
                    "--env-args", '{"api_key": "${oc.env:ENVKIT_FIXTURE_API_KEY}"}',
                    env={"ENVKIT_FIXTURE_API_KEY": SECRET})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(_rows(tmp_path)) == 4  # the load got the value
    agent = (tmp_path / "out" / "pkg" / "configs" / "verifiers_agent.yaml").read_text()
    assert "${oc.env:ENVKIT_FIXTURE_API_KEY}" in agent
    assert SECRET not in proc.stdout + proc.stderr
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file() and path.suffix != ".whl":
            assert SECRET not in path.read_text(errors="replace"), path


# -- closures ---------------------------------------------------------------------------------

def test_sandbox_env_names_the_client_incompatibility(tmp_path: Path) -> None:
    """verifiers 0.3.1's SandboxEnv passes a string start_command; every prime-sandboxes it
    admits (>= 0.2.39) refuses that: the load fails naming it, with the way out."""
    error = _refused(_convert(tmp_path, "envkit/sandbox-env", "--source",
                              str(ENVS / "sandbox-env")), tmp_path)
    assert "ValidationError" in error["message"] and "start_command" in error["message"]
    assert "'prime-sandboxes==0.2.35'" in error["hint"] and "--override FILE" in error["hint"]
    assert "every prime-sandboxes release verifiers 0.3.1 admits (>= 0.2.39)" in error["hint"]


def test_sandbox_env_converts_offline_with_the_override(tmp_path: Path) -> None:
    (tmp_path / "pins.txt").write_text("prime-sandboxes==0.2.35\n")
    proc = _convert(tmp_path, "envkit/sandbox-env", "--source", str(ENVS / "sandbox-env"),
                    "--env-args", '{"num_examples": 3}', "--override",
                    str(tmp_path / "pins.txt"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = _rows(tmp_path)
    assert [r["answer"] for r in rows] == ["0", "2", "4"]
    assert rows[0]["responses_create_params"]["input"][0]["role"] == "system"
    assert "reached the network" not in proc.stderr  # no sandbox, no API call at load
    assert "SandboxEnv" in proc.stderr
    sandboxes = _lock(tmp_path)["prime-sandboxes"]
    assert sandboxes["version"] == "0.2.35"
    assert sandboxes["source"].endswith("--override pins.txt: prime-sandboxes==0.2.35")


def test_wheels_dir_constraint_and_override(tmp_path: Path) -> None:
    wheels = tmp_path / "prebuilt"
    make_wheel(wheels, "envkit-fixture-helper", "1.0", files={
        "envkit_fixture_helper/__init__.py": b"QUESTIONS = [('1+1?', '2'), ('2+2?', '4')]\n"})
    (tmp_path / "overrides.txt").write_text("prime-sandboxes==0.2.39\n")
    (tmp_path / "constraints.txt").write_text("tenacity<9.1\n")
    proc = _convert(tmp_path, "envkit/with-helper", "--source", str(ENVS / "with-helper"),
                    "--wheels-dir", str(wheels), "--override", str(tmp_path / "overrides.txt"),
                    "--constraint", str(tmp_path / "constraints.txt"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["answer"] for r in _rows(tmp_path)] == ["2", "4"]
    lock = _lock(tmp_path)
    assert lock["envkit-fixture-helper"]["source"] == f"--wheels-dir {wheels}"
    assert lock["prime-sandboxes"]["version"] == "0.2.39"
    assert lock["prime-sandboxes"]["source"].endswith(
        "--override overrides.txt: prime-sandboxes==0.2.39")
    assert tuple(map(int, lock["tenacity"]["version"].split(".")[:2])) < (9, 1)
    assert "--constraint constraints.txt: tenacity<9.1" in lock["tenacity"]["source"]
    assert lock["with-helper"]["source"] == "the environment wheel (--wheel/--source)"
    assert lock["verifiers"]["source"] == "index files.pythonhosted.org"


def _tombstone_sdist(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / "envkit_tombstone-1.0.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        for name in ("PKG-INFO", "setup.py"):
            tar.add(ENVS / "tombstone" / name, arcname=f"envkit_tombstone-1.0/{name}")
    return out


def test_unbuildable_dependency_shows_the_builders_words(tmp_path: Path) -> None:
    links = tmp_path / "links"
    _tombstone_sdist(links)
    proc = _convert(tmp_path, "envkit/uses-tombstone", "--source",
                    str(ENVS / "uses-tombstone"), "--wheels-dir", str(links))
    error = _refused(proc, tmp_path)
    assert "renamed to 'hud'" in error["message"]
    assert "--override FILE" in error["hint"] and "--wheels-dir DIR" in error["hint"]


# -- indexes ---------------------------------------------------------------------------------

def test_hashless_index_through_the_offline_second_run(tmp_path: Path) -> None:
    """A directory served by ``python -m http.server``: PEP 503 layout, no ``#sha256=``."""
    root = tmp_path / "served"
    (root / "reverse-text").mkdir(parents=True)
    build_source(ENVS / "reverse-text", root / "reverse-text")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        proc = _convert(tmp_path, "envkit/reverse-text", "--index-url", url,
                        "--hub-version", "0.1.0", "--env-args", '{"num_examples": 3}')
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    lock = _lock(tmp_path)["reverse-text"]
    assert lock["url"].startswith(url) and lock["source"].startswith("index 127.0.0.1:")
    assert len(_rows(tmp_path)) == 3


def test_source_build_failure_shows_the_builders_words(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "setup.py").write_text(
        "import sys\nsys.exit('this project was renamed to \"hud\": depend on hud instead')\n")
    error = _refused(_convert(tmp_path, "envkit/renamed", "--source", str(src)), tmp_path)
    assert 'renamed to "hud": depend on hud instead' in error["message"]
    assert error["message"].startswith(f"building a wheel from {str(src)!r} failed")
