"""The verifier-fixture phase on REAL server venvs: the failing probe fixture case by case, and
the differential against the real ``gym env test`` on every Gym 0.7.0 server in the nemo-gym
wheel that ships a verifier fixture.

Slow. Each server is built as envkit builds any server dir (``envkit build
<site-packages>/resources_servers/<impl> --format wheels-v1``: its ``.jsonl`` files, the cases
among them, move to the dataset directory) and its venvs come from ``GymRuntime.prepare`` (the
shared cache, keyed by content); its ``wheels/`` (~400 MB, needed only to build the venvs) is
then removed, to spare the shared disk.
Gym's side runs ``gym env test NAME --json`` in a scratch directory whose
``resources_servers/<impl>/.venv`` is one venv for all three servers, made by uv with
``--python-version 3.13.14`` (Gym installs with its own interpreter's version, and this
machine's 3.13 is older than nemo-gym's floor); Gym's own setup step then finds it satisfied.
That venv is built once per machine, keyed by its interpreter and pins (``~/.cache``, as the
platform's and vLLM's test venvs), with its bytecode compiled at install: what this test
compares is the verdicts, not the venv, and in a venv made anew per run (no ``.pyc``, and
``PYTHONDONTWRITEBYTECODE`` set on CI machines) every ``gym env test`` compiled Gym, Ray,
pandas and datasets from source again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import REPO_ROOT

from envkit.gym.servers import GymRuntime
from envkit.gym.types import PolicyEndpoint, RuntimeOptions
from envkit.gym.venv import ensure_gym_venv
from envkit.probe.phases.fixtures import FixtureRun, FixturesResult, run_fixtures
from envkit.supply.uvcmd import uv_bin

pytestmark = [pytest.mark.gym, pytest.mark.network]

ENV = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}
CATALOG = {"example_single_tool_call": "example_single_tool_call",
           "aegis_v4_safety": "aegis_v4_safety", "equivalence_llm_judge": "hle_verified"}
"""Server -> the catalog entry ``gym env test`` checks it under (equivalence_llm_judge's fixture
is built from the hle_verified benchmark's config)."""
TREE_FILES = {"aegis_v4_safety": ("benchmarks/aegis_v4_safety/config.yaml",),
              "equivalence_llm_judge": ("benchmarks/hle_verified/config.yaml",
                                        "benchmarks/hle/prompts/judge.txt")}
"""Files of Gym's tree outside the server dir that a server's fixture factory reads."""
EXTRA_REQUIREMENTS = ("datasets==4.0.0",)  # equivalence_llm_judge's requirements.txt


def _site() -> Path:
    gym = ensure_gym_venv("0.7.0", allow_python_override=True)
    return next(gym.root.glob("lib/python3.*/site-packages"))


def _built(site: Path, out: Path, server: str) -> tuple[Path, Path, Path]:
    """(package, dataset, venv dir) of ``server`` built as envkit builds it."""
    pkg = out / server
    proc = subprocess.run([sys.executable, "-m", "envkit", "build",
                           str(site / "resources_servers" / server), "--format", "wheels-v1",
                           "--arch", "x86_64", "-o", str(pkg)], capture_output=True, text=True,
                          env=ENV, cwd=REPO_ROOT, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    endpoint = PolicyEndpoint("http://127.0.0.1:9/v1", "unused", "unused")
    venvs = GymRuntime(pkg, endpoint, RuntimeOptions(allow_python_override=True)).prepare()
    shutil.rmtree(pkg / "wheels")
    return pkg, out / f"{server}-data", venvs


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, Path]]:
    site = _site()
    shipped = sorted(p.parent.name for p in site.glob("resources_servers/*/*.py")
                     if "VERIFIER_FIXTURE = " in p.read_text(errors="replace"))
    assert shipped == sorted(CATALOG), "the wheel's fixture-shipping servers changed"
    out = tmp_path_factory.mktemp("built")
    return {server: _built(site, out, server) for server in shipped}


def _cases(result: FixturesResult) -> list[dict[str, Any]]:
    (server,) = result.to_dict()["servers"]
    return server["cases"]


def test_as_built_a_fixture_that_reads_gyms_tree_cannot_run(
        servers: dict[str, tuple[Path, Path, Path]]) -> None:
    """A finding, not a bug of the runner: aegis_v4_safety's and equivalence_llm_judge's
    fixture factories read a benchmark config from Gym's tree (``<root>/benchmarks/...``),
    which a package built from the server dir does not carry: EK809 names the file."""
    for server, (pkg, data, venvs) in servers.items():
        result = run_fixtures(FixtureRun(pkg, venvs, data))
        codes = {d.code for d in result.diagnostics}
        if server not in TREE_FILES:
            assert codes == set(), result.diagnostics
            continue
        assert codes == {"EK809"}
        assert all(TREE_FILES[server][0] in d.message for d in result.diagnostics)


def _gym_env_test(site: Path, work: Path, name: str) -> dict[str, Any]:
    gym_bin = site.parents[2] / "bin"
    python = Path(os.path.realpath(gym_bin / "python")).parent
    path = os.pathsep.join([str(gym_bin), str(Path(uv_bin()).parent), str(python),
                            "/usr/bin", "/bin"])
    proc = subprocess.run([str(gym_bin / "gym"), "env", "test", name, "--json"], cwd=work,
                          env={**os.environ, "PATH": path},
                          capture_output=True, text=True, timeout=900, check=False)
    line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    return {"rc": proc.returncode, "out": proc.stdout, "err": proc.stderr[-2000:],
            "report": json.loads(line) if proc.returncode == 0 else None}


SHARED_PINS = ("nemo-gym==0.7.0", "ray[default]==2.60.0", "openai==2.44.0",
               *EXTRA_REQUIREMENTS)


def _shared_venv(site: Path) -> Path:
    """The one venv of the three servers for ``gym env test``: built (under a file lock) on
    the Gym venv's interpreter the first time, then reused while its interpreter and
    :data:`SHARED_PINS` are the same."""
    uv = uv_bin()
    python = os.path.realpath(site.parents[2] / "bin" / "python")
    key = hashlib.sha256("\n".join((python, *SHARED_PINS)).encode()).hexdigest()[:12]
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "envkit-tests"
    venv = root / f"gym-env-test-{key}"
    root.mkdir(parents=True, exist_ok=True)
    with (root / f"{venv.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([uv, "venv", "-q", "--seed", "--python", python, str(venv)],
                           check=True)
            subprocess.run([uv, "pip", "install", "-q", "--compile-bytecode", "--python",
                            str(venv / "bin" / "python"), "--python-version", "3.13.14",
                            *SHARED_PINS], check=True, timeout=1200)
            (venv / ".complete").write_text("\n".join(SHARED_PINS) + "\n")
    return venv


def _gym_workdir(site: Path, work: Path) -> None:
    """One venv for the three servers, and hle_verified's benchmark with one row (``gym env
    test`` checks the manifest's dataset file exists; the wheel ships it unprepared)."""
    uv, venv = uv_bin(), _shared_venv(site)
    cache = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True, check=True)
    (work / "cache").mkdir()
    (work / "cache" / "uv").symlink_to(cache.stdout.strip())  # Gym's uv cache: uv's own (pip)
    for server in CATALOG:
        (work / "resources_servers" / server).mkdir(parents=True)
        (work / "resources_servers" / server / ".venv").symlink_to(venv)
    bench = work / "benchmarks" / "hle_verified"
    shutil.copytree(site / "benchmarks" / "hle_verified", bench,
                    ignore=shutil.ignore_patterns("__pycache__"))
    row = {"question": "What is 2+2?", "expected_answer": "4"}
    (bench / "data" / "hle_verified_benchmark.jsonl").write_text(json.dumps(row) + "\n")


def test_gym_env_test_gives_the_same_verdict_per_case(
        servers: dict[str, tuple[Path, Path, Path]], tmp_path: Path) -> None:
    """The package as built plus the tree files its fixture reads (TREE_FILES): envkit's
    verdict and observed rewards per case are ``gym env test``'s."""
    site = _site()
    _gym_workdir(site, tmp_path)
    for server, (pkg, data, venvs) in servers.items():
        for rel in TREE_FILES.get(server, ()):
            (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(site / rel, pkg / rel)
        ours = _cases(run_fixtures(FixtureRun(pkg, venvs, data)))
        gym = _gym_env_test(site, tmp_path, CATALOG[server])
        ran = [c for c in ours if c["passed"] is not None]
        if gym["rc"] == 0:
            assert all(c["passed"] for c in ran), (server, ours)
            assert [(c["name"], c["kind"], c["observed"]) for c in ran] == [
                (c["name"], c["kind"], c["observed_rewards"]) for c in gym["report"]["cases"]
            ], (server, gym["report"])
        else:  # fail-fast: the cases before the first failure passed, Gym names that one
            first = next((c for c in ran if not c["passed"]), None)
            assert first is not None, (server, gym)
            assert f"'{first['name']}'" in gym["out"], (server, gym)
            assert all(c["passed"] for c in ran[:ran.index(first)])


def test_failing_probe_fixture_case_by_case(tmp_path: Path) -> None:
    """fixtures/probe/fixture_fails: the one case the verifier does not honour fails, the
    others pass (each case judged alone), and Gym's own fail-fast check names the same one."""
    pkg = REPO_ROOT / "fixtures" / "probe" / "fixture_fails" / "pkg"
    endpoint = PolicyEndpoint("http://127.0.0.1:9/v1", "unused", "unused")
    venvs = GymRuntime(pkg, endpoint, RuntimeOptions(allow_python_override=True)).prepare()
    result = run_fixtures(FixtureRun(pkg, venvs))
    cases = _cases(result)
    assert [(c["name"], c["passed"], c["observed"]) for c in cases] == [
        ("right answer", True, [1.0]), ("right answer in capitals", False, [0.0]),
        ("wrong answer", True, [0.0]), ("missing response", True, [])]
    (server,) = result.servers
    assert server.gym_ok is False and "'right answer in capitals'" in (server.gym_error or "")
    (d,) = result.diagnostics
    assert (d.code, d.path, d.line) == (
        "EK809", "resources_servers/reverse_word/tests/verifier_cases.ndjson", 2)
