"""converters.gym_tree: planning a package from Gym server dirs, in memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from gymtree_factory import make_gym_tree

from envkit.converters.gym_tree import (
    GymTreeError,
    discover_servers,
    plan_tree,
    server_requirements,
)


def _yaml(content: Path | bytes) -> dict:
    raw = content.read_bytes() if isinstance(content, Path) else content
    return yaml.safe_load(raw)


def test_server_dir_plan_moves_rows_and_writes_policy_first(tmp_path: Path) -> None:
    server = make_gym_tree(tmp_path, "echo", ("pyyaml>=6",))
    plan = plan_tree(discover_servers(server), "wheels-v1", "echo")
    assert not any(p.endswith(".jsonl") for p in plan.files)
    assert set(plan.dataset) >= {"resources_servers/echo/data/train.jsonl", "training.jsonl"}
    assert plan.config_paths[0] == "configs/policy_model.yaml"
    policy = _yaml(plan.files["configs/policy_model.yaml"])["policy_model"]
    assert policy["responses_api_models"]["vllm_model"]["base_url"] == "${policy_base_url}"
    manifest = _yaml(plan.files["nemo-environment.yaml"])
    assert manifest == {"format": "wheels-v1", "config_paths": plan.config_paths,
                        "metadata": {"name": "echo"}}


def test_in_tree_datasets_are_dropped_and_train_rows_get_agent_ref(tmp_path: Path) -> None:
    server = make_gym_tree(tmp_path, "echo")
    plan = plan_tree(discover_servers(server), "wheels-v1", "echo")
    config = _yaml(plan.files["resources_servers/echo/configs/echo.yaml"])
    agent = config["echo_simple_agent"]["responses_api_agents"]["simple_agent"]
    assert "datasets" not in agent
    rows = [json.loads(x) for x in plan.dataset["training.jsonl"].decode().splitlines()]
    assert len(rows) == 2
    assert rows[0]["agent_ref"] == {"type": "responses_api_agents", "name": "echo_simple_agent"}
    assert "validation.jsonl" not in plan.dataset


def test_requirements_drop_gyms_editable_line(tmp_path: Path) -> None:
    server = make_gym_tree(tmp_path, "echo", ("pyyaml>=6  # yaml", "# comment"))
    assert server_requirements(discover_servers(server)[0]) == ["pyyaml>=6"]


def test_editable_local_requirement_is_refused_with_a_hint(tmp_path: Path) -> None:
    server = make_gym_tree(tmp_path, "echo", ("-e ./vendored",))
    with pytest.raises(GymTreeError, match="--wheels-dir"):
        plan_tree(discover_servers(server), "wheels-v1", "echo")


def test_native_v1_keeps_configs_under_server_type_dirs(tmp_path: Path) -> None:
    server = make_gym_tree(tmp_path, "echo", with_agent=False)
    plan = plan_tree(discover_servers(server), "native-v1", "echo")
    assert plan.config_paths[0] == "responses_api_models/vllm_model/configs/policy_model.yaml"
    assert all(p.split("/", 1)[0] in {"responses_api_models", "resources_servers"}
               for p in plan.config_paths)
    assert plan.requirements == {}


def test_missing_agent_and_relay_are_added(tmp_path: Path) -> None:
    server = make_gym_tree(tmp_path, "echo", with_agent=False)
    plan = plan_tree(discover_servers(server), "wheels-v1", "echo")
    assert plan.config_paths[-1] == "configs/envkit_agents.yaml"
    agents = _yaml(plan.files["configs/envkit_agents.yaml"])
    agent = agents["echo_simple_agent"]["responses_api_agents"]["simple_agent"]
    assert agent["resources_server"] == {"type": "resources_servers", "name": "echo"}
    relay = agents["echo_simple_agent_environment_server"]["environment_servers"]["legacy_agent"]
    assert relay["agent_server"]["name"] == "echo_simple_agent"


def test_tree_root_finds_every_server(tmp_path: Path) -> None:
    make_gym_tree(tmp_path, "one")
    make_gym_tree(tmp_path, "two")
    assert [s.rel for s in discover_servers(tmp_path)] == [
        "resources_servers/one", "resources_servers/two"]


def test_not_a_gym_tree_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(GymTreeError, match="neither a Gym server directory"):
        discover_servers(tmp_path)


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    server = make_gym_tree(tmp_path, "echo")
    with pytest.raises(GymTreeError, match="--format"):
        plan_tree(discover_servers(server), "adapter-wheels-v1", "echo")


def test_configs_defining_referenced_instances_are_carried(tmp_path: Path) -> None:
    server = make_gym_tree(tmp_path, "echo", ("pyyaml",))
    cfg = server / "configs" / "echo.yaml"
    cfg.write_text(cfg.read_text().replace(
        "      description: test server\n",
        "      description: test server\n      judge_model_server:\n"
        "        type: responses_api_models\n        name: echo_judge\n"))
    judge = tmp_path / "responses_api_models" / "echo_judge_model"
    (judge / "configs").mkdir(parents=True)
    (judge / "requirements.txt").write_text("openai\n")
    (judge / "app.py").write_text("# judge\n")
    (judge / "configs" / "judge.yaml").write_text(
        "echo_judge:\n  responses_api_models:\n    echo_judge_model:\n      entrypoint: app.py\n")
    plan = plan_tree(discover_servers(server), "wheels-v1", "echo")
    assert "responses_api_models/echo_judge_model/configs/judge.yaml" in plan.config_paths
    assert "responses_api_models/echo_judge_model/app.py" in plan.files
    assert plan.requirements["responses_api_models/echo_judge_model"] == ["openai"]
