"""Staging Gym's built-in ``verifiers_agent`` with offline requirements (no servers; the test of
the real harness builds envkit's cached nemo-gym venv and is slow)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from envkit.gym.harness import (
    HarnessError,
    adapter_of,
    offline_requirements,
    stage_harness,
    vendored_pins,
)
from envkit.gym.venv import ensure_gym_venv
from envkit.model.package import load_package

GYM_REQS = (
    "-e nemo-gym[dev] @ ../../\n"
    "verifiers @ git+https://github.com/PrimeIntellect-ai/verifiers.git@v0.3.1\n"
    "--extra-index-url https://hub.primeintellect.ai/primeintellect/simple/\n"
    "acereason-math\n"
    "-e ../../benchmarks/automationbench\n"
)
WHEELS = ("verifiers-0.3.1-py3-none-any.whl", "reverse_text-0.1.0-py3-none-any.whl",
          "nemo_gym-0.7.0-py3-none-any.whl")


def _gym_root(tmp_path: Path, reqs: str = GYM_REQS) -> Path:
    harness = tmp_path / "gym" / "lib" / "python3.13" / "site-packages" / \
        "responses_api_agents" / "verifiers_agent"
    (harness / "tests").mkdir(parents=True)
    (harness / "requirements.txt").write_text(reqs)
    (harness / "app.py").write_text("import verifiers\n")
    return tmp_path / "gym"


def _manifest(fmt: str = "adapter-wheels-v1", agent: str = "verifiers_agent") -> dict:
    return {"format": fmt, "config_paths": ["configs/a.yaml"],
            "metadata": {"name": "reverse-text", "vf_env_id": "reverse-text"},
            "adapter": {"agent": agent, "agent_type": "responses_api_agents"}}


def _work(tmp_path: Path, manifest: dict, wheels: tuple[str, ...] = WHEELS) -> Path:
    work = tmp_path / "work"
    (work / "wheels").mkdir(parents=True)
    for name in wheels:
        (work / "wheels" / name).write_bytes(b"")
    (work / "nemo-environment.yaml").write_text(yaml.safe_dump(manifest))
    return work


def test_requirements_become_the_vendored_pins_from_wheels_only() -> None:
    text, dropped = offline_requirements(GYM_REQS, [Path("/p/wheels")],
                                         ["verifiers==0.3.1", "reverse-text==0.1.0"])
    assert text.splitlines() == ["--no-index", "--find-links /p/wheels", "verifiers==0.3.1",
                                 "reverse-text==0.1.0"]
    assert len(dropped) == 5 and not any("github" in line for line in text.splitlines())


def test_pins_name_the_env_wheel_by_its_hub_dist_name() -> None:
    assert vendored_pins(WHEELS, "reverse-text") == ("verifiers==0.3.1", "reverse-text==0.1.0")


@pytest.mark.parametrize("missing", ["verifiers", "reverse_text"])
def test_a_missing_vendored_wheel_is_ek403(missing: str) -> None:
    with pytest.raises(HarnessError, match=missing.replace("_", "-")) as info:
        vendored_pins([w for w in WHEELS if not w.startswith(missing)], "reverse-text")
    assert info.value.code == "EK403"


def test_adapter_of_reads_only_adapter_packages() -> None:
    assert adapter_of(_manifest()) == ("verifiers_agent", "reverse-text")
    assert adapter_of(_manifest("wheels-v1")) is None
    assert adapter_of({"format": "adapter-wheels-v1", "adapter": "x"}) is None


def test_stage_copies_the_harness_and_logs_each_replacement(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    work = _work(tmp_path, _manifest())
    caplog.set_level(logging.WARNING)
    staged = stage_harness(_gym_root(tmp_path), work, load_package(work))
    assert staged is not None
    dest = work / "responses_api_agents" / "verifiers_agent"
    assert staged.path == dest and (dest / "app.py").is_file()
    assert not (dest / "tests").exists()  # Gym's own tests do not ship into the run
    assert "--no-index" in (dest / "requirements.txt").read_text()
    assert f"--find-links {work / 'wheels'}" in (dest / "requirements.txt").read_text()
    assert "acereason-math" in caplog.text and "git+https" in caplog.text
    assert "reverse-text==0.1.0" in caplog.text


@pytest.mark.parametrize("manifest", [_manifest("wheels-v1"), _manifest(agent="other_agent")])
def test_other_packages_and_harnesses_are_left_alone(tmp_path: Path, manifest: dict) -> None:
    work = _work(tmp_path, manifest)
    assert stage_harness(_gym_root(tmp_path), work, load_package(work)) is None
    assert not (work / "responses_api_agents").exists()


def test_a_package_that_would_shadow_the_harness_is_refused(tmp_path: Path) -> None:
    work = _work(tmp_path, _manifest())
    (work / "responses_api_agents" / "verifiers_agent").mkdir(parents=True)
    with pytest.raises(HarnessError, match="shadow") as info:
        stage_harness(_gym_root(tmp_path), work, load_package(work))
    assert info.value.code == "EK112"


def test_a_gym_without_the_harness_is_ek110(tmp_path: Path) -> None:
    work = _work(tmp_path, _manifest())
    with pytest.raises(HarnessError, match="no built-in") as info:
        stage_harness(tmp_path / "empty", work, load_package(work))
    assert info.value.code == "EK110"


@pytest.mark.gym
def test_the_real_harness_needs_only_what_wheels_vendor(tmp_path: Path) -> None:
    """Gym 0.7.0's own requirements.txt: every line is replaced, app.py comes along.

    Slow: builds (or reuses) envkit's cached nemo-gym venv, the one a rollout runs."""
    work = _work(tmp_path, _manifest())
    gym = ensure_gym_venv(allow_python_override=True)
    staged = stage_harness(gym.root, work, load_package(work))
    assert staged is not None and (staged.path / "app.py").is_file()
    assert any("git+https://github.com" in line for line in staged.dropped)
    assert "acereason-math" in staged.dropped


def test_the_runtime_reports_a_staging_failure_with_its_code(tmp_path: Path) -> None:
    from envkit.gym.servers import GymRuntime
    from envkit.gym.types import GymRuntimeError, PolicyEndpoint, RuntimeOptions
    from envkit.gym.venv import GymVenv

    work = _work(tmp_path, _manifest())
    runtime = GymRuntime(work, PolicyEndpoint("http://x", "k", "m"), RuntimeOptions())
    with pytest.raises(GymRuntimeError, match="adapter harness") as info:
        runtime._stage_harness(GymVenv(tmp_path / "empty", "0.7.0", "3.13.0", False), work, [])
    assert info.value.code == "EK110"
