"""Real Gym servers (from the nemo-gym 0.7.0 wheel) built for both cluster arches from PyPI.

Slow: needs PyPI on a cold cache. Servers: math_formal_lean (httpx closure) + structeval
(PyYAML, a platform wheel), kept small on purpose; the full runtime closure (nemo-gym, ray,
openai: ~360 MB per arch) is measured by benchmarks/bench_build.py instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gym_trees.fetch_gym_servers import fetch_gym_servers

from envkit.model.target import Target
from envkit.supply.uvcmd import clean_env, python_platform
from envkit.validators import RULES

pytestmark = pytest.mark.network

SERVERS = ("resources_servers/math_formal_lean", "resources_servers/structeval")


@pytest.fixture(scope="module")
def gym_tree() -> Path:
    return fetch_gym_servers()


def _envkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envkit", *args], capture_output=True,
                          text=True, env=env or dict(os.environ), check=False)


def _digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _offline_install_check(pkg: Path, target: Target, requirements: list[str],
                           tmp: Path) -> subprocess.CompletedProcess[str]:
    """What the cluster's second install does: resolve from wheels/ alone, no index."""
    from uv import find_uv_bin

    req = tmp / "requirements.in"
    req.write_text("\n".join(requirements) + "\n")
    cmd = [find_uv_bin(), "pip", "compile", str(req), "--offline", "--no-index", "--no-config",
           "--find-links", str(pkg / "wheels"), "--python-platform", python_platform(target),
           "--python-version", "3.13", "--only-binary", ":all:", "--python", sys.executable,
           "--cache-dir", str(tmp / "uv-cache")]
    return subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), check=False)


@pytest.mark.parametrize("arch", ["aarch64", "x86_64"])
def test_real_gym_servers_build_for_the_cluster_arch(
    gym_tree: Path, tmp_path: Path, arch: str
) -> None:
    out = tmp_path / "pkg"
    result = _envkit("build", *(str(gym_tree / s) for s in SERVERS), "--arch", arch,
                     "--no-runtime-pins", "-o", str(out))
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["valid"], verdict
    yaml_wheels = [p.name for p in (out / "wheels").glob("pyyaml-*.whl")]
    assert len(yaml_wheels) == 1 and f"_{arch}" in yaml_wheels[0]
    assert not list(out.rglob("*.jsonl"))
    lock = json.loads((out / "wheels.lock").read_text())
    assert {w["filename"] for w in lock["wheels"]} == {p.name for p in (out / "wheels").iterdir()}
    requirements = [r["requirement"] for r in lock["requirements"]]
    target = Target(arch)
    ok = _offline_install_check(out, target, requirements, tmp_path)
    assert ok.returncode == 0, ok.stderr
    other = "x86_64" if arch == "aarch64" else "aarch64"
    wrong = _envkit("validate", str(out), "--arch", other, "--format", "json")
    if "EK401" in RULES:  # the closure checks (wheels-closure branch) are merged
        assert wrong.returncode == 1
        assert "EK401" in {d["code"] for d in json.loads(wrong.stdout)["diagnostics"]}
    (out / "wheels" / yaml_wheels[0]).unlink()
    broken = _offline_install_check(out, target, requirements, tmp_path)
    assert broken.returncode != 0
    assert "pyyaml" in broken.stderr.lower()


def test_warm_rebuild_makes_no_network_request_and_is_identical(
    gym_tree: Path, tmp_path: Path
) -> None:
    sources = [str(gym_tree / s) for s in SERVERS]
    args = ["build", *sources, "--arch", "aarch64", "--no-runtime-pins"]
    first = _envkit(*args, "-o", str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr
    dead = "http://127.0.0.1:9"  # nothing listens: any request (uv or envkit) fails
    env = {**os.environ, "HTTPS_PROXY": dead, "https_proxy": dead, "HTTP_PROXY": dead,
           "http_proxy": dead, "ALL_PROXY": dead}
    second = _envkit(*args, "-o", str(tmp_path / "b"), env=env)
    assert second.returncode == 0, second.stderr
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert _digest(tmp_path / "a-data") == _digest(tmp_path / "b-data")
    cold = {**env, "ENVKIT_CACHE_DIR": str(tmp_path / "empty-cache")}
    proves_proxy_is_dead = _envkit(*args, "-o", str(tmp_path / "c"), env=cold)
    assert proves_proxy_is_dead.returncode == 2
    assert "uv could not resolve" in proves_proxy_is_dead.stderr


@pytest.mark.parametrize("arch", ["aarch64", "x86_64"])
def test_default_build_is_offline_clean(gym_tree: Path, tmp_path: Path, arch: str) -> None:
    """The default build vendors nemo-gym, ray[default] and openai: validate --offline passes.

    x86_64 needs glibc 2_28: nemo-gym 0.7.0's pyarrow ships no manylinux_2_17 x86_64 wheel."""
    out = tmp_path / "pkg"
    server = str(gym_tree / "resources_servers/example_single_tool_call")
    built = _envkit("build", server, "--arch", arch, "--glibc", "2_28", "-o", str(out))
    assert built.returncode == 0, built.stderr
    checked = _envkit("validate", str(out), "--arch", arch, "--glibc", "2_28", "--offline",
                      "--format", "json")
    assert checked.returncode == 0, checked.stdout
