"""`envkit probe` on REAL Gym servers (nemo-gym 0.7.0): reasoning renderings and tool calls.

The reasoning fixtures (``fixtures/probe/reasoning_*``) are ``sound``'s server with one scoring
rule changed and the model server's ``uses_reasoning_parser`` set to the shape under test; the
tool-call fixtures (``fixtures/probe/tool_call_*``) an ``xlam_fc``-shaped server that serves
the tool it asks for. ``xlam_fc`` itself is Gym 0.7.0's own server and rows, copied out of the
Gym venv into a package. Each package is probed once (4 rows, each reply scored once).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.paths import REPO_ROOT
from support.proc_marks import MARK, survivors

from envkit.gym.venv import ensure_gym_venv
from envkit.schemas import load_schema

pytestmark = pytest.mark.gym

PROBE = REPO_ROOT / "fixtures" / "probe"
ENV = {"ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}
REDUCED = ("--rows", "4", "--repeats", "1")
EXPECTED: dict[str, tuple[str, ...]] = {
    "reasoning_sound": (),
    "reasoning_leak": ("EK812",),
    "reasoning_no_strip": (),  # a warning only: EK813 (test_no_strip_warns)
    "tool_call_sound": (),
    "tool_call_name_only": ("EK801", "EK809"),  # its own "wrong city" case scores 1.0 too
}
_RUNS: dict[str, dict[str, Any]] = {}


def _run(root: Path, out: Path) -> dict[str, Any]:
    mark = os.urandom(8).hex()
    proc = subprocess.run(
        [sys.executable, "-m", "envkit", "probe", str(root / "pkg"), "--dataset",
         str(root / "data"), "--job", str(root / "job.json"),
         "--allow-python-override", "--output-format", "json", "-o", str(out), *REDUCED],
        capture_output=True, text=True, timeout=1500, check=False, cwd=REPO_ROOT,
        env={**os.environ, **ENV, MARK: mark})
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    jsonschema.validate(report, load_schema("probe"))
    return {"rc": proc.returncode, "report": report, "stderr": proc.stderr,
            "left": survivors(mark)}


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    def get(case: str) -> dict[str, Any]:
        if case not in _RUNS:
            root = PROBE / case if (PROBE / case).is_dir() else _xlam(tmp_path_factory)
            _RUNS[case] = _run(root, tmp_path_factory.mktemp(case))
        return _RUNS[case]
    return get


def _xlam(factory: pytest.TempPathFactory) -> Path:
    """Gym 0.7.0's ``xlam_fc`` (server, config, example rows) as a native-v1 package."""
    venv = ensure_gym_venv(allow_python_override=True)
    (gym,) = venv.root.glob("lib/python3*/site-packages/resources_servers/xlam_fc")
    root = factory.mktemp("xlam_fc")
    server = root / "pkg" / "resources_servers" / "xlam_fc"
    (server / "configs").mkdir(parents=True)
    for name in ("app.py", "requirements.txt"):
        shutil.copy(gym / name, server / name)
    shutil.copy(gym / "configs" / "xlam_fc.yaml", server / "configs" / "xlam_fc.yaml")
    policy = root / "pkg" / "responses_api_models" / "vllm_model" / "configs"
    policy.mkdir(parents=True)
    sound = PROBE / "sound"
    shutil.copy(sound / "pkg" / "responses_api_models" / "vllm_model" / "configs" /
                "policy_model.yaml", policy / "policy_model.yaml")
    (root / "pkg" / "nemo-environment.yaml").write_text(
        "format: native-v1\nconfig_paths:\n"
        "  - responses_api_models/vllm_model/configs/policy_model.yaml\n"
        "  - resources_servers/xlam_fc/configs/xlam_fc.yaml\n"
        "metadata:\n  name: xlam-fc\n  description: Gym 0.7.0 xlam_fc\n")
    (root / "data").mkdir()
    agent = {"type": "responses_api_agents", "name": "xlam_fc_simple_agent"}
    rows = [{**json.loads(line), "agent_ref": agent}
            for line in (gym / "data" / "example.jsonl").read_text().splitlines() if line]
    (root / "data" / "training.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.copy(sound / "job.json", root / "job.json")
    return root


def _errors(report: dict[str, Any]) -> list[str]:
    return sorted({d["code"] for d in report["diagnostics"] if d["severity"] == "error"})


def _means(report: dict[str, Any]) -> dict[str, float | None]:
    (agent,) = report["agents"]
    return {p["policy"]: p["mean"] for p in agent["policies"]}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_case_verdict(probed: Any, case: str) -> None:
    run = probed(case)
    report = run["report"]
    assert report["stage"] == "done", run["stderr"][-3000:]
    assert _errors(report) == list(EXPECTED[case]), report["diagnostics"]
    assert run["rc"] == (1 if EXPECTED[case] else 0) and report["passed"] is not EXPECTED[case]
    assert "EK804" not in report["codes"]
    assert run["left"] == [], run["left"]


def test_reasoning_sound_sees_inline_reasoning_and_scores_only_the_oracle(probed: Any) -> None:
    report = probed("reasoning_sound")["report"]
    assert report["codes"] == []
    (agent,) = report["reasoning"]["agents"]
    assert agent["shape"] == "inline" and agent["oracle_mean"] == 1.0
    assert {p["policy"]: p["mean"] for p in agent["policies"]} == {
        "reasoning:oracle": 1.0, "reasoning:wrong-final": 0.0, "reasoning:answer-only": 0.0}
    assert _means(report)["skeleton:think-junk"] == 0.0


def test_reasoning_leak_is_gameable_through_the_reasoning_item(probed: Any) -> None:
    report = probed("reasoning_leak")["report"]
    (agent,) = report["reasoning"]["agents"]
    assert agent["shape"] == "reasoning item"
    (d,) = report["diagnostics"]
    assert d["code"] == "EK812" and "`reasoning:answer-only` 1" in d["message"]
    assert all(v == 0.0 for k, v in _means(report).items() if not k.startswith("oracle:"))


def test_no_strip_warns(probed: Any) -> None:
    run = probed("reasoning_no_strip")
    report = run["report"]
    assert [(d["code"], d["severity"]) for d in report["diagnostics"]] == [("EK813", "warning")]
    (agent,) = report["reasoning"]["agents"]
    assert agent["shape"] == "inline" and agent["oracle"] == "oracle:bare"
    assert agent["policies"][0] == {"policy": "reasoning:oracle", "mean": 0.0, "scored": 4,
                                    "failed": 0, "first_failure": None}


@pytest.mark.parametrize("case", ["tool_call_sound", "xlam_fc"])
def test_tool_call_oracle_scores_and_content_free_calls_do_not(probed: Any, case: str) -> None:
    """The oracle's calls reach the verifier as `function_call` items and score 1.0 (a sound
    server: no EK804, no EK808); every content-free reply, the empty call and the call with
    wrong arguments among them, scores 0.0."""
    run = probed(case)
    report = run["report"]
    assert report["stage"] == "done", run["stderr"][-3000:]
    assert run["rc"] == 0 and _errors(report) == [], report["diagnostics"]
    assert not {"EK804", "EK808"} & set(report["codes"]), report["diagnostics"]
    (agent,) = report["agents"]
    assert agent["oracle"] == "oracle:function-call"
    means = _means(report)
    assert means["oracle:function-call"] >= 0.9
    assert means["call:empty"] == 0.0 and means["call:wrong-arguments"] == 0.0
    assert all(v == 0.0 for k, v in means.items() if k != "oracle:function-call")
    assert report["reasoning"]["skipped"] == [
        {"agent": agent["agent"], "reason": "the reference is a function call"}]
    assert run["left"] == [], run["left"]


def test_name_only_tool_verifier_is_gameable(probed: Any) -> None:
    report = probed("tool_call_name_only")["report"]
    (d,) = [d for d in report["diagnostics"] if d["code"] == "EK801"]
    assert "`call:wrong-arguments` 1" in d["message"], d["message"]
    assert _means(report)["call:empty"] == 0.0  # no name: not the expected call
