"""EK318: required fields and simple types of Gym built-in server config models."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from support.gym_configs import AGENT, POLICY, ek3, make_pkg

from envkit.cli import main
from envkit.model.gym_data import gym_data
from envkit.validators import RULES
from envkit.validators.gym.fields import lax_accepts

if TYPE_CHECKING:
    from pathlib import Path

FLAG = "      uses_reasoning_parser: true\n"


def _policy(tmp_path: Path, policy: str, extra: dict[str, str] | None = None) -> Path:
    configs = {"configs/policy_model.yaml": policy, "configs/agent.yaml": AGENT, **(extra or {})}
    return make_pkg(tmp_path, configs, ["configs/policy_model.yaml", "configs/agent.yaml"])


def test_generated_models_come_from_the_wheel() -> None:
    models = gym_data().server_models
    vllm = gym_data().server_model("responses_api_models", "vllm_model", "app.py")
    assert vllm is not None
    assert vllm.model == "VLLMModelConfig"
    assert set(vllm.required) == {
        "base_url", "api_key", "model", "return_token_id_information", "uses_reasoning_parser",
    }
    assert vllm.fields["uses_reasoning_parser"] == {"bool"}
    assert vllm.fields["base_url"] == {"str", "list"}
    # Gym fills (host, port, name) or checks (entrypoint, domain) these itself.
    every = [m for entries in models.values() for m in entries.values() if m is not None]
    assert len(every) > 100
    assert not any({"host", "port", "name", "entrypoint", "domain"} & set(m.fields) for m in every)
    # Entrypoints that need more than the Gym venv are unknown, not guessed.
    assert gym_data().server_model("responses_api_agents", "verifiers_agent", "app.py") is None


def test_missing_reasoning_flag_is_reported_at_the_block(tmp_path: Path) -> None:
    pkg = _policy(tmp_path, POLICY.replace(FLAG, ""))
    (diag,) = ek3(pkg)
    assert (diag.code, diag.path, diag.line) == ("EK318", "configs/policy_model.yaml", 3)
    assert diag.message.startswith(
        "`policy_model.responses_api_models.vllm_model.uses_reasoning_parser` is missing"
    )
    assert "VLLMModelConfig" in diag.message
    assert "Field required" in diag.message
    assert "uses_reasoning_parser" in (diag.hint or "")


def test_every_missing_field_is_reported(tmp_path: Path) -> None:
    bare = "policy_model:\n  responses_api_models:\n    vllm_model:\n      entrypoint: app.py\n"
    found = {d.message.split("`")[1].rsplit(".", 1)[1] for d in ek3(_policy(tmp_path, bare))
             if d.code == "EK318"}
    assert found == {"base_url", "api_key", "model", "return_token_id_information",
                     "uses_reasoning_parser"}


@pytest.mark.parametrize(("value", "flagged"), [
    ("true", False),
    ('"true"', False),  # pydantic's lax mode reads the string as a bool
    ("'off'", False),
    ("1", False),
    ("maybe", True),
    ("2", True),
    ("[true]", True),
    ("null", True),
    ("${oc.env:REASONING,true}", False),  # resolved at start: not judged
    ("???", False),  # EK313's finding, not EK318's
])
def test_bool_field_types(tmp_path: Path, value: str, flagged: bool) -> None:
    pkg = _policy(tmp_path, POLICY.replace(FLAG, f"      uses_reasoning_parser: {value}\n"))
    ek318 = [d for d in ek3(pkg) if d.code == "EK318"]
    assert bool(ek318) == flagged, [d.message for d in ek318]
    if flagged:
        assert ek318[0].line == 9
        assert "Input should be a valid boolean" in ek318[0].message


def test_union_field_accepts_each_member(tmp_path: Path) -> None:
    as_list = POLICY.replace("${policy_base_url}", "['http://a/v1', 'http://b/v1']")
    assert ek3(_policy(tmp_path, as_list)) != []  # EK312 (hard-coded), but no EK318
    assert "EK318" not in {d.code for d in ek3(_policy(tmp_path, as_list))}
    as_int = POLICY.replace("api_key: ${policy_api_key}", "api_key: 12345")
    (diag,) = [d for d in ek3(_policy(tmp_path, as_int)) if d.code == "EK318"]
    assert "12345" in diag.message
    assert "a valid string" in diag.message


def test_package_shipping_the_implementation_is_not_checked(tmp_path: Path) -> None:
    """Gym runs the package's own `vllm_model/` (install marker), not its built-in model."""
    pkg = _policy(tmp_path, POLICY.replace(FLAG, ""), {
        "responses_api_models/vllm_model/requirements.txt": "",
        "responses_api_models/vllm_model/app.py": "",
    })
    assert "EK318" not in {d.code for d in ek3(pkg)}


def test_unknown_model_is_skipped(tmp_path: Path) -> None:
    agent = AGENT.replace("simple_agent:", "verifiers_agent:")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": agent})
    assert "EK318" not in {d.code for d in ek3(pkg)}


def test_block_from_a_gym_config_is_not_guessed(tmp_path: Path) -> None:
    """A block partly defined by a Gym built-in config: envkit knows that file only in summary."""
    top = "config_paths:\n- responses_api_models/vllm_model/configs/vllm_model.yaml\n" + AGENT
    override = "policy_model:\n  responses_api_models:\n    vllm_model:\n      model: m\n"
    pkg = make_pkg(tmp_path, {"configs/agent.yaml": top, "configs/override.yaml": override})
    assert "EK318" not in {d.code for d in ek3(pkg)}


def test_agent_missing_its_model_server(tmp_path: Path) -> None:
    agent = AGENT.replace(
        "      model_server:\n        type: responses_api_models\n        name: policy_model\n", "",
    )
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": agent})
    (diag,) = [d for d in ek3(pkg) if d.code == "EK318"]
    assert diag.message.startswith("`agent.responses_api_agents.simple_agent.model_server`")


@pytest.mark.parametrize(("value", "kinds", "accepted"), [
    ("true", {"bool"}, True), ("YES", {"bool"}, True), ("maybe", {"bool"}, False),
    (0, {"bool"}, True), (1.0, {"bool"}, True), (2, {"bool"}, False),
    (True, {"int"}, True), (3.0, {"int"}, True), (3.5, {"int"}, False), ("12", {"int"}, True),
    ("1.5", {"float"}, True), ("x", {"float"}, False), (2, {"float"}, True),
    (3, {"str"}, False), (True, {"str"}, False), ([], {"str"}, False),
    ("a", {"list"}, False), ({}, {"list"}, False), ([], {"dict"}, False),
    (None, {"str", "none"}, True), (None, {"str"}, False),
])
def test_lax_accepts_table(value: object, kinds: set[str], accepted: bool) -> None:
    assert lax_accepts(value, frozenset(kinds)) is accepted


def test_numbers_for_str_when_the_model_coerces() -> None:
    assert lax_accepts(3, frozenset({"str"}), coerce_numbers_to_str=True)


def test_rule_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    assert RULES["EK318"].title
    assert "uses_reasoning_parser" in RULES["EK318"].fix
    assert main(["rule", "EK318"]) == 0
    out = capsys.readouterr().out
    assert "EK318" in out and "Why is this bad?" in out and "How to fix" in out


def test_cli_json_names_the_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pkg = _policy(tmp_path, POLICY.replace(FLAG, ""))
    assert main(["validate", str(pkg), "--format", "json"]) == 1
    diags = json.loads(capsys.readouterr().out)["diagnostics"]
    (diag,) = [d for d in diags if d["code"] == "EK318"]  # wheels-v1 without wheels/: EK201
    assert diag["line"] == 3
    assert "uses_reasoning_parser" in diag["message"]


def test_whole_value_interpolation_is_followed_to_a_literal(tmp_path: Path) -> None:
    """`${judge_api_key}` with `judge_api_key: null` at the top level: None at start."""
    policy = POLICY.replace("api_key: ${policy_api_key}", "api_key: ${judge_api_key}")
    pkg = _policy(tmp_path, "judge_api_key: null\n" + policy)
    (diag,) = [d for d in ek3(pkg) if d.code == "EK318"]
    assert "'${judge_api_key}', which resolves to None" in diag.message
    set_key = _policy(tmp_path, "judge_api_key: k\n" + policy)
    assert "EK318" not in {d.code for d in ek3(set_key)}
    from_env = POLICY.replace("api_key: ${policy_api_key}", "api_key: ${oc.env:KEY,null}")
    assert "EK318" not in {d.code for d in ek3(_policy(tmp_path, from_env))}
