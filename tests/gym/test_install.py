"""The Gym runtime's parts that need no servers: the venv cache key, the log -> EK rule
diagnosis, agent relays, refusing a package without a manifest."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from toy_envs import make_native_package

from envkit.gym import (
    GymRuntime,
    GymRuntimeError,
    PolicyEndpoint,
    RuntimeOptions,
    ServerInfo,
    Where,
    diagnose,
)
from envkit.gym.head import relays
from envkit.gym.install import RunPaths, gym_args, gym_env, package_key, write_uv_toml
from envkit.gym.venv import GymVenv
from envkit.supply.cache import uv_cache_under
from envkit.validators.runtime_signatures import SIGNATURES, Signature


def test_package_key_follows_content(tmp_path: Path) -> None:
    pkg = make_native_package(tmp_path / "p")
    key = package_key(pkg, "0.7.0")
    assert key == package_key(pkg, "0.7.0")
    assert key != package_key(pkg, "0.7.1")
    (pkg / "resources_servers/char_pattern/app.py").write_text("# changed\n")
    assert key != package_key(pkg, "0.7.0")


@pytest.mark.parametrize(("log", "code"), [
    ("AlmostServerError: Found 1 almost-server(s)", "EK302"),
    ("ServerRefNotFoundError: Available responses_api_models: (none)", "EK304"),
    ("Missing pyproject.toml or requirements.txt for uv venv setup", "EK205"),
    ("Because foo was not found in the provided package locations and you require foo", "EK403"),
    ("ModuleNotFoundError: No module named 'numpy'", "EK403"),
    ("the current Python version (3.13.0) does not satisfy Python>=3.13.14", "EK406"),
    ("Config value 'x' references 'y', which is not set after merging.", "EK313"),
])
def test_diagnose_log_names_the_likely_rule(log: str, code: str) -> None:
    assert diagnose(log, Where.START).code == code
    assert diagnose(log, Where.INSTALL).code == code


def test_a_reading_quotes_the_log_line_that_showed_it() -> None:
    found = diagnose("x\n  File app.py\nModuleNotFoundError: No module named 'numpy'\n",
                     Where.START)
    assert found.evidence == "ModuleNotFoundError: No module named 'numpy'"
    assert diagnose("nothing known here", Where.START).code == "EK705"
    assert diagnose("nothing known here", Where.INSTALL) == (None, "see the log tail above", "")


def test_relays_map_agents_to_their_environment_server() -> None:
    config = {"env": {"environment_servers": {"legacy_agent": {"agent_server": {
        "type": "responses_api_agents", "name": "agent"}}}}, "agent": {}}
    servers = {n: ServerInfo(n, "x", "y", f"http://h/{n}") for n in ("env", "agent")}
    assert relays(config, servers) == {"agent": "env"}


def test_runtime_rejects_a_package_without_manifest(tmp_path: Path) -> None:
    with pytest.raises(GymRuntimeError) as info:
        GymRuntime(tmp_path, PolicyEndpoint("u", "k", "m"), RuntimeOptions())
    assert info.value.code == "EK100"


@pytest.mark.parametrize("signature", SIGNATURES, ids=lambda s: s.code or "host")
def test_every_runtime_signature_names_a_known_rule(
    signature: Signature,
) -> None:
    """The log table lives with the rules: each code it names is a registered rule."""
    from envkit.validators import RULES

    assert signature.code is None or signature.code in RULES
    re.compile(signature.pattern)


def test_gym_and_its_installs_use_the_uv_cache_of_the_runtimes_cache_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uv keys its unpacked find-links wheels by path: in uv's shared cache, the copies of a
    removed ``--cache-dir``'s wheels stayed forever (the slow closure test proves the install)."""
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "users-uv"))
    gym = GymVenv(tmp_path / "gym", "0.7.0", "3.13.0", False)
    paths = RunPaths(tmp_path / "run", tmp_path / "ray")
    paths.run_dir.mkdir()
    uv_cache = uv_cache_under(tmp_path / "cache")
    env = gym_env(gym, paths, write_uv_toml(gym, paths.run_dir, offline=False), uv_cache)
    assert env["UV_CACHE_DIR"] == str(tmp_path / "cache" / "uv")
    args = gym_args(["c.yaml"], PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m"),
                    tmp_path / "venvs", paths.run_dir, 9000, uv_cache)
    assert f"++uv_cache_dir={tmp_path / 'cache' / 'uv'}" in args
