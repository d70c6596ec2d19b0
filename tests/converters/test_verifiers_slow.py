"""End-to-end ``envkit convert verifiers`` on real environments (slow: PyPI resolution, uv venvs).

The fixture environments are built into wheels once per session and served from a PEP 503
index on 127.0.0.1 (the hub stand-in); the conversions run the real CLI in a subprocess.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from support.pep503 import serve_index

from envkit.converters.env_source import build_source
from envkit.supply.provenance import dataset_digest
from envkit.validators import RULES

pytestmark = pytest.mark.network

ROOT = REPO_ROOT
ENVS = ROOT / "fixtures" / "verifiers_envs"
OTHER = {"x86_64": "aarch64", "aarch64": "x86_64"}


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    for project in ("reverse-text", "arithmetic", "hostile"):
        built = build_source(ENVS / project, tmp_path_factory.mktemp(project))
        shutil.copy2(built, out / built.name)
    return out


@pytest.fixture(scope="session")
def index_url(wheelhouse: Path):
    with serve_index(wheelhouse) as url:
        yield url


def _envkit(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envkit", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def _convert(tmp_path: Path, hub_id: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return _envkit("convert", "verifiers", "--hub-id", hub_id, "--out-dir",
                   str(tmp_path / "pkg"), "--dataset-dir", str(tmp_path / "data"), *extra)


def _validate(tmp_path: Path, arch: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return _envkit("validate", str(tmp_path / "pkg"), "--dataset", str(tmp_path / "data"),
                   "--arch", arch, "--glibc", "2_28", "--format", "json", *flags)


def _codes(proc: subprocess.CompletedProcess[str]) -> set[str]:
    return {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}


def _rows(data: Path) -> list[dict]:
    return [json.loads(line) for name in ("training.jsonl", "validation.jsonl")
            if (data / name).exists() for line in (data / name).read_text().splitlines()]


def _constant(path: Path, name: str) -> object:
    """A literal module constant, read without importing the environment (no verifiers here)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise KeyError(name)


def _source_args(how: str, project: str, wheelhouse: Path, index_url: str) -> list[str]:
    if how == "hub" and project == "arithmetic":
        # unpinned, and PyPI has an unrelated `arithmetic`: the hub index must win
        return ["--index-url", index_url, "--allow-latest"]
    if how == "hub":
        return ["--index-url", index_url, "--hub-version", "0.1.0"]
    if how == "wheel":
        return ["--wheel", str(next(wheelhouse.glob(f"{project.replace('-', '_')}-*.whl")))]
    return ["--source", str(ENVS / project)]


@pytest.mark.parametrize(("project", "arch", "how"), [
    ("reverse-text", "x86_64", "hub"),
    ("arithmetic", "aarch64", "hub"),
    ("arithmetic", "x86_64", "wheel"),
    ("reverse-text", "aarch64", "source"),
])
def test_convert_validates_for_its_arch(tmp_path: Path, wheelhouse: Path, index_url: str,
                                                project: str, arch: str, how: str) -> None:
    env_args = '{"num_examples": 6, "seed": 11}' if project == "reverse-text" else "{}"
    proc = _convert(tmp_path, f"envkit/{project}", "--arch", arch, "--validation-fraction",
                    "0.25", "--seed", "3", "--env-args", env_args,
                    *_source_args(how, project, wheelhouse, index_url))
    assert proc.returncode == 0, proc.stderr[-3000:]
    verdict = json.loads(proc.stdout)
    assert verdict["valid"] and verdict["format"] == "adapter-wheels-v1"
    assert verdict["name"] == project and verdict["validation_rows"] > 0
    wheels = sorted(p.name for p in (tmp_path / "pkg" / "wheels").glob("*.whl"))
    assert "verifiers-0.3.1-py3-none-any.whl" in wheels
    assert "nemo_gym-0.7.0-py3-none-any.whl" in wheels  # Gym's runtime pins co-resolved
    assert "openai-2.44.0-py3-none-any.whl" in wheels
    assert any(w.startswith(project.replace("-", "_") + "-") for w in wheels)
    assert any(arch in w for w in wheels)  # pyzmq, numpy, regex, ... built for the target
    assert not any(OTHER[arch] in w for w in wheels)
    if project == "reverse-text":
        _check_reverse_text_rows(tmp_path)
    assert verdict["diagnostics"] == []
    record = json.loads((tmp_path / "pkg" / "provenance.json").read_text())
    assert record["closure"] == {"nemo-gym": "0.7.0", "verifiers": "0.3.1"}
    assert record["dataset"]["sha256"] == dataset_digest(tmp_path / "data")
    ok = _validate(tmp_path, arch)
    assert ok.returncode == 0 and json.loads(ok.stdout)["diagnostics"] == [], ok.stdout
    # seed 001: adapter-wheels-v1 needs egress at job start, because verifiers_agent's own
    # requirements.txt installs verifiers from GitHub; wheels/ covers everything else
    offline = _validate(tmp_path, arch, "--offline")
    (egress,) = json.loads(offline.stdout)["diagnostics"]  # pip and vllm_model's build: vendored
    assert egress["code"] == "EK403" and "git+https" in egress["message"]
    if "EK401" in RULES:  # wheel tags vs target: lands with the EK4xx checks
        assert "EK401" in _codes(_validate(tmp_path, OTHER[arch]))


def _check_reverse_text_rows(tmp_path: Path) -> None:
    """The rows carry the env's formatted prompt exactly: system prompt, few-shot, question."""
    source = ENVS / "reverse-text" / "reverse_text" / "__init__.py"
    system, few_shot = _constant(source, "SYSTEM_PROMPT"), _constant(source, "FEW_SHOT")
    rows = _rows(tmp_path / "data")
    assert sorted(r["task_idx"] for r in rows) == list(range(6))
    for row in rows:
        expected = [{"role": "system", "content": system}, *few_shot,
                    {"role": "user", "content": row["question"]}]
        assert row["responses_create_params"]["input"] == expected
        assert row["answer"] == row["question"][::-1]
        assert row["vf_env_id"] == "reverse-text"
        assert row["agent_ref"] == {"type": "responses_api_agents", "name": "verifiers_agent"}
    agent = (tmp_path / "pkg" / "configs" / "verifiers_agent.yaml").read_text()
    assert "num_examples: 6" in agent  # the same env args reach the cluster


@pytest.mark.parametrize(("module", "extra", "message"), [
    ("hostile-raise", [], "needs an API key"),
    ("hostile-hang", ["--timeout", "5"], "did not finish within 5 s"),
    ("hostile-escape", ["--env-args", '{"target": "/tmp/envkit-escape-test.txt"}'],
     "outside its temp dir"),
])
def test_hostile_env_fails_cleanly_without_output(tmp_path: Path, wheelhouse: Path,
                                                  module: str, extra: list, message: str) -> None:
    wheel = next(wheelhouse.glob("envkit_hostile_envs-*.whl"))
    proc = _convert(tmp_path, f"envkit/{module}", "--wheel", str(wheel), *extra)
    assert proc.returncode == 1
    verdict = json.loads(proc.stdout)
    assert verdict["valid"] is False and message in verdict["error"]["message"]
    assert "Traceback" not in proc.stderr.split("output of the environment")[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no PKG, no DATA, no temp dirs
    assert not Path("/tmp/envkit-escape-test.txt").exists()


def test_env_printing_to_stdout_still_converts(tmp_path: Path, wheelhouse: Path) -> None:
    wheel = next(wheelhouse.glob("envkit_hostile_envs-*.whl"))
    proc = _convert(tmp_path, "envkit/hostile-print", "--wheel", str(wheel))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["training_rows"] == 4  # stdout is only the verdict


def test_a_source_tree_builds_to_the_same_wheel_bytes_in_another_checkout(
    tmp_path: Path, wheelhouse: Path,
) -> None:
    """Another checkout (new mtimes) an hour later builds the wheel the session built: the same
    source is the same package, and reuses the server venvs keyed by the wheels' content."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ENVS / "reverse-text", checkout, copy_function=shutil.copy,
                    ignore=shutil.ignore_patterns("build", "*.egg-info"))
    later = 3600 + max(p.stat().st_mtime for p in checkout.rglob("*"))
    for path in checkout.rglob("*"):
        os.utime(path, (later, later))
    built = build_source(checkout, tmp_path / "out")
    first = next(wheelhouse.glob("reverse_text-*.whl"))
    assert built.name == first.name
    assert built.read_bytes() == first.read_bytes()
