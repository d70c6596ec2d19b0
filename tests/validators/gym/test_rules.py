"""EK3xx edge cases: locations, Gym's wording, multi-file merges, interpolation forms."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from envkit.model.package import load_package
from envkit.validators.gym.interp import interpolations
from envkit.validators.gym.model import build_view, merge_order

if TYPE_CHECKING:
    from pathlib import Path


from support.gym_configs import AGENT, ENV, POLICY, ek3, make_pkg


def codes(pkg: Path) -> dict[str, str]:
    return {d.code: d.severity.value for d in ek3(pkg)}


def test_minimal_package_is_clean(tmp_path: Path) -> None:
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT})
    assert ek3(pkg) == []


# --- locations -------------------------------------------------------------------------------


def test_line_points_at_the_offending_key(tmp_path: Path) -> None:
    agent = AGENT.replace("      entrypoint: app.py\n      model_server",
                          "      entrypoint: app.py\n      domain: ''\n      model_server", 1)
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": agent})
    (diag,) = ek3(pkg)
    assert (diag.code, diag.path, diag.line) == ("EK303", "configs/agent.yaml", 5)
    assert "`agent`" in diag.message


def test_missing_key_points_at_its_block(tmp_path: Path) -> None:
    res = "r:\n  resources_servers:\n    echo:\n      entrypoint: app.py\n"
    pkg = make_pkg(tmp_path, {
        "configs/policy_model.yaml": POLICY, "configs/r.yaml": res,
        "resources_servers/echo/requirements.txt": "", "resources_servers/echo/app.py": "",
    }, ["configs/policy_model.yaml", "configs/r.yaml"])
    (diag,) = ek3(pkg)
    assert (diag.code, diag.path, diag.line) == ("EK302", "configs/r.yaml", 3)


def test_ref_location_and_gym_did_you_mean(tmp_path: Path) -> None:
    agent = AGENT.replace("name: policy_model", "name: policy_modle")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": agent})
    (diag,) = ek3(pkg)
    assert (diag.code, diag.line, diag.severity.value) == ("EK304", 5, "error")
    assert diag.hint == "Did you mean: 'policy_model'?"  # Gym's own wording, cutoff 0.6


def test_ref_hint_lists_what_exists_when_nothing_is_close(tmp_path: Path) -> None:
    agent = AGENT.replace("name: policy_model", "name: judge")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": agent})
    (diag,) = ek3(pkg)
    assert diag.hint == "Available responses_api_models: 'policy_model'"


def test_nested_ref_is_a_warning(tmp_path: Path) -> None:
    agent = AGENT.replace("      model_server:", "      judges:\n      - server:\n"
                          "          type: responses_api_models\n          name: judge\n"
                          "      model_server:")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": agent})
    (diag,) = ek3(pkg)
    assert (diag.code, diag.severity.value, diag.line) == ("EK304", "warning", 6)
    assert "judges[0].server" in diag.message


def test_block_without_entrypoint_warns_unless_referenced(tmp_path: Path) -> None:
    spare = "spare:\n  resources_servers:\n    echo:\n      domain: math\n"
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT,
                              "configs/spare.yaml": spare})
    (diag,) = ek3(pkg)
    assert (diag.code, diag.severity.value, diag.line) == ("EK301", "warning", 3)
    assert "silently skips" in diag.message


@pytest.mark.parametrize(("text", "line"), [
    ("shared: {}\n", 1),
    ("shared:\n  a: {}\n  b: 1\n", 2),
    ("spare:\n  resources_servers: {}\n", 2),
])
def test_empty_mappings_crash_gyms_launcher(tmp_path: Path, text: str, line: int) -> None:
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT,
                              "configs/x.yaml": text})
    (diag,) = ek3(pkg)
    assert (diag.code, diag.severity.value, diag.path, diag.line) == (
        "EK301", "error", "configs/x.yaml", line,
    )
    assert "IndexError" in diag.message


def test_unknown_server_type_suggests_the_right_one(tmp_path: Path) -> None:
    typo = AGENT.replace("  responses_api_agents:", "  response_api_agents:", 1)
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": typo})
    (diag,) = ek3(pkg)
    assert (diag.code, diag.severity.value, diag.line) == ("EK301", "error", 2)
    assert diag.hint == "did you mean `responses_api_agents`?"


def test_unreadable_config_withholds_not_defined_findings(tmp_path: Path) -> None:
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": "policy_model: [\n",
                              "configs/agent.yaml": AGENT})
    assert codes(pkg) == {"EK300": "error"}  # no EK305/EK304 guessed from a partial view


def test_missing_policy_model_is_reported_once(tmp_path: Path) -> None:
    pkg = make_pkg(tmp_path, {"configs/agent.yaml": AGENT})
    assert codes(pkg) == {"EK305": "error"}


# --- several configs -------------------------------------------------------------------------


def test_identical_and_additive_duplicates_are_fine(tmp_path: Path) -> None:
    extra = "agent:\n  responses_api_agents:\n    simple_agent:\n      max_steps: 4\n"
    pkg = make_pkg(tmp_path, {
        "configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT,
        "configs/again.yaml": AGENT, "configs/extra.yaml": extra,
    })
    assert ek3(pkg) == []


def test_conflicting_value_warns_in_the_later_file(tmp_path: Path) -> None:
    other = POLICY.replace("${policy_model_name}", "${policy_model_name}-b")
    pkg = make_pkg(tmp_path, {
        "configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT, "configs/b.yaml": other,
    })
    (diag,) = ek3(pkg)
    assert (diag.code, diag.severity.value, diag.path, diag.line) == (
        "EK307", "warning", "configs/b.yaml", 7,
    )


def test_conflicting_implementation_is_an_error(tmp_path: Path) -> None:
    other = POLICY.replace("vllm_model", "openai_model")
    pkg = make_pkg(tmp_path, {
        "configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT, "configs/b.yaml": other,
    })
    assert codes(pkg) == {"EK307": "error"}


def test_policy_model_not_first(tmp_path: Path) -> None:
    pkg = make_pkg(tmp_path, {"configs/agent.yaml": AGENT, "configs/policy_model.yaml": POLICY})
    (diag,) = ek3(pkg)
    assert (diag.code, diag.path, diag.line) == ("EK306", "nemo-environment.yaml", 3)


def test_config_paths_inside_a_config_are_followed(tmp_path: Path) -> None:
    top = "config_paths:\n- configs/policy_model.yaml\n" + AGENT
    pkg = make_pkg(tmp_path, {"configs/top.yaml": top, "configs/policy_model.yaml": POLICY},
                   ["configs/top.yaml"])
    assert ek3(pkg) == []  # policy model found, and included by the first file: no EK306


def test_merge_order_matches_gym(tmp_path: Path) -> None:
    """Gym: a config follows what it pulled in; later siblings (and their includes) win."""
    pkg = make_pkg(tmp_path, {
        "a.yaml": "config_paths: [a1.yaml, a2.yaml]\n", "a1.yaml": "{}\n",
        "a2.yaml": "config_paths: [a21.yaml]\n", "a21.yaml": "{}\n",
        "b.yaml": "config_paths: [a1.yaml]\n",
    }, ["a.yaml", "b.yaml"])
    order, _ = merge_order(load_package(pkg))
    assert order == ["a1.yaml", "a21.yaml", "a2.yaml", "a.yaml", "b.yaml"]


def test_includer_overrides_included(tmp_path: Path) -> None:
    top = "config_paths:\n- configs/base.yaml\n" + POLICY
    base = POLICY.replace("${policy_base_url}", "http://fixed/v1")
    configs = {"configs/top.yaml": top, "configs/base.yaml": base, "configs/agent.yaml": AGENT}
    pkg = make_pkg(tmp_path, configs, ["configs/top.yaml", "configs/agent.yaml"])
    view = build_view(load_package(pkg))
    assert view.instances["policy_model"].shape.fields["base_url"] == "${policy_base_url}"
    assert ek3(pkg) == []  # specialising an included config is what includes are for


def test_sibling_configs_overriding_each_other_warn(tmp_path: Path) -> None:
    other = POLICY.replace("${policy_base_url}", "${policy_base_url}/x")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT,
                              "configs/other.yaml": other})
    assert codes(pkg) == {"EK307": "warning"}


def test_gym_builtin_config_can_be_included(tmp_path: Path) -> None:
    """Gym loads an include the package does not ship from its install root."""
    top = "config_paths:\n- responses_api_models/vllm_model/configs/vllm_model.yaml\n" + AGENT
    pkg = make_pkg(tmp_path, {"configs/agent.yaml": top})
    view = build_view(load_package(pkg))
    assert view.builtin == {"responses_api_models/vllm_model/configs/vllm_model.yaml"}
    assert ek3(pkg) == []  # policy_model comes from Gym's vllm_model.yaml


def test_builtin_include_refs_are_checked(tmp_path: Path) -> None:
    """critpt.yaml's relay refers to `critpt_agent`, which its own include defines."""
    top = "config_paths:\n- resources_servers/critpt/configs/critpt.yaml\n"
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/top.yaml": top})
    assert ek3(pkg) == []
    override = top + "critpt_agent_environment_server:\n  environment_servers:\n" \
        "    legacy_agent:\n      agent_server: {type: responses_api_agents, name: critpt}\n"
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/top.yaml": override})
    (diag,) = ek3(pkg)
    assert (diag.code, diag.path, diag.hint) == ("EK304", "configs/top.yaml",
                                                 "Did you mean: 'critpt_agent'?")


@pytest.mark.parametrize(("entry", "ok"), [
    ("responses_api_models/vllm_model/configs/vllm_model.yaml", True),
    ("configs/policy_model.yaml", True),
    ("configs/nope.yaml", False),
    ("/etc/gym.yaml", False),
    ("../outside.yaml", False),
])
def test_include_paths(tmp_path: Path, entry: str, ok: bool) -> None:
    top = f"config_paths:\n- {entry}\n"
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT,
                              "configs/top.yaml": top})
    assert ("EK316" not in codes(pkg)) is ok


# --- inheritance -----------------------------------------------------------------------------


def test_inherit_from_moves_the_agent_and_gym_retargets_its_relay(tmp_path: Path) -> None:
    child = "agent_v2:\n  _inherit_from: agent\n"
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT,
                              "configs/child.yaml": child})
    view = build_view(load_package(pkg))
    assert "agent" not in view.instances
    assert view.instances["agent_v2"].shape.server_type == "responses_api_agents"
    assert ek3(pkg) == []


def test_copy_keeps_the_source(tmp_path: Path) -> None:
    child = "agent_v2: ${copy:agent}\n" + ENV.format(agent="agent_v2")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT,
                              "configs/child.yaml": child})
    view = build_view(load_package(pkg))
    assert {"agent", "agent_v2"} <= set(view.instances)
    assert ek3(pkg) == []


# --- interpolation ---------------------------------------------------------------------------


def test_interpolations_finds_outermost_expressions() -> None:
    assert interpolations("a ${x.y} b ${oc.env:V,${z}} \\${esc} ${open") == [
        "x.y", "oc.env:V,${z}",
    ]


@pytest.mark.parametrize(("value", "expected"), [
    ("${policy_api_key}", None),
    ("${oc.env:HOME_X,fallback}", None),
    ("${oc.env:HOME_X}", "error"),
    ("${shared.n}", None),
    ("${shared.missing}", "error"),
    ("${nowhere}", "error"),
    ("${.sibling}", None),
    ("${oc.decode:'1'}", None),
    ("${no_such_resolver:x}", "error"),
    ("${port_range_low}", None),  # Gym sets it before it resolves server fields
    ("${head_server.port}", "error"),  # ... but not this one
    ("prefix-${shared.n}-suffix", None),
    ("???", "error"),
    ("\\${escaped}", None),
])
def test_interpolation_forms_in_a_direct_field(tmp_path: Path, value: str, expected: str) -> None:
    agent = AGENT.replace("      model_server:", f"      x: \"{value}\"\n      model_server:")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY + "shared:\n  n: 3\n",
                              "configs/agent.yaml": agent})
    found = codes(pkg)
    assert found.get("EK313") == expected, found


@pytest.mark.parametrize(("value", "expected"), [
    ("${nowhere}", "warning"),
    ("${head_server.port}", None),
    ("???", "error"),  # Gym walks the whole merged config for '???'
])
def test_interpolation_forms_nested(tmp_path: Path, value: str, expected: str) -> None:
    agent = AGENT.replace("      model_server:", f"      deep:\n        x: \"{value}\"\n"
                          "      model_server:")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": agent})
    assert codes(pkg).get("EK313") == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("agent_v2:\n  _inherit_from: agent\n", None),
    ("agent_v2:\n  _inherit_from: agnet\n", "error"),
    ("agent_v2: ${copy:agent}\n", None),
    ("agent_v2: ${copy:agent.nope}\n", "error"),
    ("x:\n  deep:\n    _copy: agent.responses_api_agents\n", None),
])
def test_inherit_and_copy_paths_must_exist(tmp_path: Path, text: str, expected: str) -> None:
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": AGENT,
                              "configs/x.yaml": text + ENV.format(agent="agent_v2")})
    assert codes(pkg).get("EK313") == expected


def test_overridden_interpolation_is_not_reported(tmp_path: Path) -> None:
    agent = AGENT.replace("      model_server:", "      x: ${nowhere}\n      model_server:")
    fix = "agent:\n  responses_api_agents:\n    simple_agent:\n      x: 3\n"
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/agent.yaml": agent,
                              "configs/fix.yaml": fix})
    assert "EK313" not in codes(pkg)


# --- datasets, dirs, endpoint, relays -------------------------------------------------------


def _with_datasets(entries: str) -> str:
    anchor = "      model_server:"
    return AGENT.replace(anchor, "      datasets:\n" + entries + anchor)


@pytest.mark.parametrize(("entries", "expected"), [
    ("      - {name: a, type: example, jsonl_fpath: /a.jsonl}\n", {}),
    ("      - {name: a, type: train, jsonl_fpath: /a.jsonl, license: MIT}\n", {}),
    ("      - {name: a, type: train, jsonl_fpath: /a.jsonl}\n", {"EK315": "error"}),
    ("      - {name: a, type: train, jsonl_fpath: /a.jsonl, license: WTFPL}\n",
     {"EK315": "error"}),
    ("      - {name: a, type: test, jsonl_fpath: /a.jsonl}\n", {"EK315": "error"}),
    ("      - {type: example, jsonl_fpath: /a.jsonl}\n", {"EK315": "error"}),
    ("      - {name: a, type: example, jsonl_fpath: /a.jsonl, num_repeats: 0}\n",
     {"EK315": "error"}),
    ("      - {name: a, type: benchmark, jsonl_fpath: /a.jsonl}\n", {"EK315": "error"}),
    ("      - {name: a, type: example, jsonl_fpath: data/a.jsonl}\n", {"EK311": "warning"}),
    ("      - just-a-string\n", {"EK315": "error"}),
])
def test_dataset_entries(tmp_path: Path, entries: str, expected: dict[str, str]) -> None:
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY,
                              "configs/agent.yaml": _with_datasets(entries)})
    assert codes(pkg) == expected


def test_builtin_named_dir_without_code_is_not_shadowing(tmp_path: Path) -> None:
    pkg = make_pkg(tmp_path, {
        "responses_api_models/vllm_model/configs/policy_model.yaml": POLICY,
        "configs/agent.yaml": AGENT,
    })
    assert ek3(pkg) == []  # configs only: Gym runs the built-in, as intended


def test_hard_coded_model_name_warns(tmp_path: Path) -> None:
    policy = POLICY.replace("${policy_model_name}", "Qwen/Qwen3-8B")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": policy, "configs/agent.yaml": AGENT})
    (diag,) = ek3(pkg)
    assert (diag.code, diag.line) == ("EK312", 7)


def test_unbound_agent_needs_no_relay(tmp_path: Path) -> None:
    agent = ("swap:\n  responses_api_agents:\n    simple_agent:\n      entrypoint: app.py\n"
             "      resources_server:\n        type: resources_servers\n        name: ???\n")
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/a.yaml": agent})
    assert "EK314" not in codes(pkg)


@pytest.mark.parametrize("text", [
    "- a\n- b\n",
    "x: [1, 2]\n",
    "a:\n  responses_api_agents: [1]\n",
    "a:\n  responses_api_agents:\n    s: [1]\n",
    "a:\n  responses_api_agents:\n    s:\n      entrypoint: 3\n      datasets: 7\n",
    "a:\n  resources_servers:\n    s:\n      entrypoint: ../../x.py\n      domain: [x]\n",
    "1: {2: {3: {entrypoint: x}}}\n",
    "a:\n  responses_api_agents:\n    s:\n      entrypoint: app.py\n"
    "      r: {type: responses_api_models, name: 5}\n",
    "a: ${\n",
    "",
])
def test_checks_never_raise(tmp_path: Path, text: str) -> None:
    pkg = make_pkg(tmp_path, {"configs/policy_model.yaml": POLICY, "configs/x.yaml": text})
    for diag in ek3(pkg):
        assert diag.message and diag.hint
