"""envkit's EK3xx verdicts against the REAL nemo-gym config machinery.

Every EK3xx fixture, the valid fixtures and a set of edge-case variants are loaded by
``tests/support/gym_probe.py`` inside the cached Gym venv (one subprocess for all of them): Gym's
own ``GlobalConfigDictParser.parse`` with cwd = the package root, then the server directory
``gym env start`` would run, and for Gym's built-in servers the start-up validation of each
block by its implementation's pydantic config model. envkit must report an EK3xx error exactly
where Gym rejects the package, and warnings only where Gym accepts it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.paths import REPO_ROOT, SUPPORT

from envkit.gym.venv import GymVenv, ensure_gym_venv
from envkit.model.gym_data import gym_data
from envkit.model.package import load_package
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators.gym.fields import _resolve, lax_accepts
from envkit.validators.gym.model import own_servers, view_of

ROOT = REPO_ROOT
PACKAGES = ROOT / "fixtures" / "packages"
sys.path.insert(0, str(ROOT / "fixtures"))

from gym_config_cases import (  # noqa: E402
    AGENT_HEAD,
    BASE,
    MANIFEST,
    POLICY,
    RES,
    Edit,
    add_config,
    replace,
    write,
)
from support.gym_tree_packages import build_tree_packages, site_packages  # noqa: E402

pytestmark = pytest.mark.gym

def _package_case(case: Path) -> bool:
    """EK3xx and valid cases whose package has a manifest (dataset/job-only cases do not)."""
    spec = json.loads((case / "case.json").read_text())
    pkg = case / spec["package"] if spec.get("package") else None
    return pkg is not None and (pkg / "nemo-environment.yaml").is_file()


FIXTURES = sorted(
    p.parent for p in PACKAGES.glob("*/case.json")
    if p.parent.name.startswith(("EK3", "valid-")) and _package_case(p.parent)
)

_INHERIT = (
    "echo_match_agent_v2:\n  _inherit_from: echo_match_simple_agent\n"
    "  responses_api_agents:\n    simple_agent:\n      max_steps: 3\n"
)
_TWO_TYPES = (
    "extra:\n  resources_servers:\n    echo_match:\n      entrypoint: app.py\n      domain: other\n"
    "  responses_api_agents:\n    simple_agent:\n      entrypoint: app.py\n"
)

ENV_KEY = "echo_match_environment_server:"
DESCRIPTION = "      description: Rewards"


def agent_field(text: str) -> Edit:
    """Add fields to the simple_agent block."""
    return replace(RES, AGENT_HEAD, AGENT_HEAD + text)


def instance_before_env(text: str) -> Edit:
    return replace(RES, ENV_KEY, text + ENV_KEY)


def datasets(text: str) -> Edit:
    return replace(RES, DESCRIPTION, "      datasets:\n" + text + DESCRIPTION)


VARIANTS: dict[str, list[Edit]] = {
    # Gym checks refs only in a server's direct fields: a nested one is a warning.
    "nested-ref": [agent_field("      judge:\n        server:\n"
                               "          type: responses_api_models\n          name: judge\n")],
    # Gym-filled keys exist for nested values (resolved in the server) but not during parse.
    "runtime-key-direct": [agent_field("      hp: ${head_server.port}\n")],
    "runtime-key-nested": [agent_field("      head:\n        port: ${head_server.port}\n")],
    "unknown-key-nested": [agent_field("      a:\n        b: ${nope}\n")],
    "env-with-default": [agent_field("      t: ${oc.env:ECHO_T,none}\n")],
    "top-level-scalars": [replace(RES, "echo_match:\n",
                                  "judge_url: ${policy_base_url}\nshared:\n  n: 3\necho_match:\n")],
    "interp-from-other-config": [
        agent_field("      n: ${shared.n}\n"),
        write("resources_servers/echo_match/configs/shared.yaml", "shared:\n  n: 3\n"),
        add_config("resources_servers/echo_match/configs/shared.yaml"),
    ],
    "inherit-from": [instance_before_env(_INHERIT)],
    "inherit-from-missing": [instance_before_env("agent_v2:\n  _inherit_from: no_such_agent\n")],
    "copy-nested-path": [agent_field("      judge: ${copy:shared.judge}\n"),
                         instance_before_env("shared:\n  judge:\n    k: 1\n")],
    "nested-config-paths": [
        replace(RES, "echo_match:\n",
                "config_paths:\n- resources_servers/echo_match/configs/x.yaml\necho_match:\n"),
        write("resources_servers/echo_match/configs/x.yaml",
              "echo_match:\n  resources_servers:\n    echo_match:\n      entrypoint: bad.py\n"),
    ],
    "override-value": [
        write("resources_servers/echo_match/configs/dup.yaml",
              "echo_match:\n  resources_servers:\n    echo_match:\n      domain: math\n"),
        add_config("resources_servers/echo_match/configs/dup.yaml"),
    ],
    "two-server-types": [instance_before_env(_TWO_TYPES)],
    "agent-without-entrypoint": [replace(RES, AGENT_HEAD, "    simple_agent:\n      x: 1\n")],
    # Gym's launcher walks `list(value)[0]` two levels down: empty mappings crash it.
    "empty-top-level-mapping": [instance_before_env("shared: {}\n")],
    "empty-first-value": [instance_before_env("shared:\n  a: {}\n  b: 1\n")],
    "empty-later-value": [instance_before_env("shared:\n  a: 1\n  b: {}\n")],
    "empty-implementations": [instance_before_env("spare:\n  resources_servers: {}\n")],
    "allowed-model-types-match": [replace(
        RES, "      domain: other\n",
        "      domain: other\n      allowed_model_types: vllm_model\n",
    )],
    "allowed-model-types-waived": [
        replace(RES, "      domain: other\n",
                "      domain: other\n      allowed_model_types: [openai_model]\n"),
        replace(RES, "echo_match:\n", "allow_unsupported_pairing: true\necho_match:\n"),
    ],
    # No entrypoint and nothing refers to it: Gym skips the block silently (envkit warns).
    "unreferenced-block-without-entrypoint": [
        instance_before_env("spare:\n  responses_api_agents:\n    simple_agent:\n      x: 1\n"),
    ],
    # `gym env start` launches it anyway (first key at each level) and fails on the directory.
    "unreferenced-unknown-type": [
        instance_before_env("spare:\n  resource_server:\n    x:\n      entrypoint: app.py\n"),
    ],
    "benchmark-dataset": [datasets(
        "      - name: b\n        type: benchmark\n"
        "        jsonl_fpath: /b.jsonl\n        prepare_script: p.py\n",
    )],
    "bad-num-repeats": [datasets("      - name: e\n        type: example\n"
                                 "        jsonl_fpath: /e.jsonl\n        num_repeats: 0\n")],
    # An include the package does not ship is loaded from Gym's install root.
    "include-builtin-policy-model": [
        replace(MANIFEST, f"  - {POLICY}\n", ""),
        replace(RES, "echo_match:\n", "config_paths:\n"
                "- responses_api_models/vllm_model/configs/vllm_model.yaml\necho_match:\n"),
    ],
    "include-builtin-environment": [
        replace(RES, "echo_match:\n", "config_paths:\n"
                "- resources_servers/critpt/configs/critpt.yaml\necho_match:\n"),
    ],
    "include-builtin-then-break-its-ref": [
        replace(RES, "echo_match:\n", "config_paths:\n"
                "- resources_servers/critpt/configs/critpt.yaml\n"
                "critpt_agent:\n  responses_api_agents:\n    critpt_agent:\n"
                "      resources_server: {name: critpt_resources}\necho_match:\n"),
    ],
    "valid-domain-on-agent": [agent_field("      domain: other\n")],
    "resources-domain-null": [replace(RES, "      domain: other\n", "      domain: null\n")],
    # EK318: what each built-in's config model (here VLLMModelConfig, SimpleAgentConfig) takes.
    "reasoning-flag-quoted-true": [replace(POLICY, "uses_reasoning_parser: true",
                                           'uses_reasoning_parser: "true"')],
    "reasoning-flag-yes": [replace(POLICY, "uses_reasoning_parser: true",
                                   "uses_reasoning_parser: yes")],
    "reasoning-flag-maybe": [replace(POLICY, "uses_reasoning_parser: true",
                                     "uses_reasoning_parser: maybe")],
    "reasoning-flag-two": [replace(POLICY, "uses_reasoning_parser: true",
                                   "uses_reasoning_parser: 2")],
    "token-ids-flag-missing": [replace(POLICY, "      return_token_id_information: true\n", "")],
    "api-key-int": [replace(POLICY, "api_key: ${policy_api_key}", "api_key: 12345")],
    "base-url-list": [replace(POLICY, "base_url: ${policy_base_url}",
                              "base_url: ['${policy_base_url}']")],
    "max-steps-float": [agent_field("      max_steps: 3.0\n")],
    "max-steps-fraction": [agent_field("      max_steps: 2.5\n")],
    "max-steps-text": [agent_field("      max_steps: '1_000'\n")],
    "agent-without-model-server": [replace(
        RES, "      model_server:\n        type: responses_api_models\n"
        "        name: policy_model\n", "",
    )],
    "policy-model-wrong-type": [replace(
        POLICY,
        "  responses_api_models:\n    vllm_model:\n      entrypoint: app.py\n",
        "  resources_servers:\n    vllm_model:\n      entrypoint: app.py\n      domain: other\n",
    )],
}


def _variant(tmp: Path, name: str) -> Path:
    pkg = tmp / name / "pkg"
    shutil.copytree(BASE, pkg)
    for edit in VARIANTS[name]:
        edit(pkg)
    return pkg


def _envkit(pkg: Path) -> tuple[set[str], set[str]]:
    report = validate(ValidateRequest(package=pkg))
    ek3 = [d for d in report.diagnostics if d.code.startswith("EK3")]
    return ({d.code for d in ek3 if d.severity.value == "error"},
            {d.code for d in ek3 if d.severity.value == "warning"})


def _config_paths(pkg: Path) -> list[str]:
    return yaml.safe_load((pkg / "nemo-environment.yaml").read_text())["config_paths"]


def _gym_rejects(result: dict, pkg: Path) -> str | None:
    """Why Gym would not run this package's servers as shipped, or None.

    That is: the parse aborts, a server has no directory or entrypoint, Gym silently runs a
    built-in in place of a directory the package ships code in (EK309), or a built-in server's
    config model rejects its block when it starts (EK318).
    """
    if not result["ok"]:
        return f"{result['error_type']}: {result['error'][:300]}"
    errors = _model_errors(pkg, result)
    if errors:
        return f"ValidationError at start: {errors}"
    for server in result["servers"]:
        if server["dir"] == "missing":
            return f"{server['name']}: no server dir for {server['type']}/{server['impl']}"
        if not server["entrypoint_exists"]:
            return f"{server['name']}: entrypoint missing in {server['dir']} dir"
        if server["shadowed"] and _holds_code(pkg, server):
            return f"{server['name']}: Gym runs its built-in {server['impl']}, not the package's"
    return None


def _model_errors(pkg: Path, result: dict) -> list[tuple[str, str, str, str]]:
    """``(instance, impl, field, pydantic error type)`` Gym's config models raise at start.

    Only for blocks the package writes itself: one that only a Gym config pulled in defines is
    not the package's to fix (critpt.yaml's `api_key: ${oc.select:...,null}` waits for its
    user's key), and envkit knows those configs only in summary. A field whose value goes
    through a resolver (`${oc.env:NVIDIA_API_KEY,null}`) depends on the environment the server
    runs in, not on the package (also through a `${key}` chain, as `frontierscience_judge`'s
    `${judge_api_key}`); the probe has none of it, so those errors are left out too.
    """
    view = view_of(load_package(pkg))
    own = {i.name: i for i in own_servers(view)}
    found = []
    for server in result["servers"]:
        instance = own.get(server["name"])
        if instance is None or server["model"]["status"] != "invalid":
            continue
        for error in server["model"]["errors"]:
            field = error["loc"][0] if error["loc"] else ""
            value = _resolve(instance.shape.fields.get(field, ""), view.merged if view else {})
            if "${oc." in str(value):
                continue
            found.append((server["name"], server["impl"], field, error["type"]))
    return found


def _holds_code(pkg: Path, server: dict) -> bool:
    return any((pkg / server["type"] / server["impl"]).rglob("*.py"))


TREE_SAMPLE_STEP = 4
"""Every 4th of Gym's ~240 resources-server configs (``benchmarks/gym_tree_sweep.py`` runs all)."""


@pytest.fixture(scope="module")
def venv() -> GymVenv:
    return ensure_gym_venv("0.7.0", allow_python_override=True)


@pytest.fixture(scope="module")
def tree_packages(venv: GymVenv, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("gym-tree")
    return build_tree_packages(site_packages(venv.root), tmp, TREE_SAMPLE_STEP)


@pytest.fixture(scope="module")
def packages(
    tmp_path_factory: pytest.TempPathFactory, tree_packages: dict[str, Path]
) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("variants")
    found = {
        case.name: case / json.loads((case / "case.json").read_text())["package"]
        for case in FIXTURES
    }
    found.update({f"variant-{name}": _variant(tmp, name) for name in VARIANTS})
    return {**found, **tree_packages}


@pytest.fixture(scope="module")
def gym_results(
    packages: dict[str, Path], venv: GymVenv, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict]:
    requests = [
        {"id": name, "root": str(pkg.resolve()), "config_paths": _config_paths(pkg)}
        for name, pkg in packages.items()
    ]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    proc = subprocess.run(
        [str(venv.python), str(SUPPORT / "gym_probe.py")],
        input=json.dumps(requests), capture_output=True, text=True, env=env,
        cwd=tmp_path_factory.mktemp("probe-cwd"), check=False, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {r["id"]: r for r in json.loads(proc.stdout)}


CASE_IDS = [c.name for c in FIXTURES] + [f"variant-{n}" for n in VARIANTS]


@pytest.mark.parametrize("case", CASE_IDS)
def test_envkit_errors_exactly_where_gym_rejects(
    case: str, packages: dict[str, Path], gym_results: dict[str, dict]
) -> None:
    errors, warnings = _envkit(packages[case])
    rejected = _gym_rejects(gym_results[case], packages[case])
    detail = f"envkit errors={sorted(errors)} warnings={sorted(warnings)}; gym: {rejected}"
    assert bool(errors) == bool(rejected), detail


@pytest.mark.parametrize("case", CASE_IDS)
def test_shadowed_builtin_matches_gym(
    case: str, packages: dict[str, Path], gym_results: dict[str, dict]
) -> None:
    pkg = packages[case]
    shadowed = any(
        s["shadowed"] and _holds_code(pkg, s) for s in gym_results[case]["servers"]
    )
    errors, _ = _envkit(pkg)
    assert ("EK309" in errors) == shadowed


def _ek318_fields(pkg: Path) -> set[tuple[str, str]]:
    """``(instance, field)`` of each EK318 finding (its message opens with the key path)."""
    report = validate(ValidateRequest(package=pkg))
    keys = [d.message.split("`")[1] for d in report.diagnostics if d.code == "EK318"]
    return {(key.split(".")[0], key.rsplit(".", 1)[1]) for key in keys}


def _gym_model_errors(
    pkg: Path, result: dict
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """``(instance, field)`` Gym's config models reject in the package's own blocks: all of
    them, and the missing ones of models envkit knows (those it must all report)."""
    rejected, missing = set(), set()
    types = {s["name"]: s["type"] for s in result["servers"]}
    for name, impl, field, kind in _model_errors(pkg, result):
        rejected.add((name, field))
        # every fixture, variant and sampled Gym config here starts its servers from app.py
        known = gym_data().server_model(types[name], impl, "app.py")
        if kind == "missing" and known is not None:
            missing.add((name, field))
    return rejected, missing


@pytest.mark.parametrize("case", CASE_IDS)
def test_ek318_matches_gym_config_models(
    case: str, packages: dict[str, Path], gym_results: dict[str, dict]
) -> None:
    """Every EK318 finding is a field Gym's model rejects; every missing field is found."""
    found = _ek318_fields(packages[case])
    rejected, missing = _gym_model_errors(packages[case], gym_results[case])
    assert found <= rejected, f"envkit {sorted(found)}; gym {sorted(rejected)}"
    assert missing <= found, f"envkit {sorted(found)}; gym missing {sorted(missing)}"


def test_ek318_cases_reach_the_model(gym_results: dict[str, dict]) -> None:
    """The probe really validated the built-ins' blocks: Gym's own verdicts on the EK318 cases."""
    def policy(case: str) -> dict:
        return next(s for s in gym_results[case]["servers"] if s["name"] == "policy_model")

    assert policy("valid-native-v1")["model"] == {"status": "ok", "errors": []}
    missing = policy("EK318-policy-model-missing-reasoning-flag")["model"]
    assert missing["status"] == "invalid"
    assert [(e["loc"], e["type"]) for e in missing["errors"]] == [
        (["uses_reasoning_parser"], "missing"),
    ]
    assert policy("variant-reasoning-flag-quoted-true")["model"]["status"] == "ok"
    assert policy("variant-reasoning-flag-maybe")["model"]["status"] == "invalid"


_LAX_VALUES = [
    True, False, 0, 1, 2, -1, 0.0, 1.0, 1.5, 3.0, 10**20, float("inf"), None, [], [1], {},
    {"a": 1}, "true", "True", " true", "yes", "Y", "on", "off", "no", "f", "t", "0", "1", "2",
    "01", " 1 ", "1_000", "1__0", "1.0", "1.", "1.5", "-3", "+3", "0x10", "abc", "", "inf",
    "nan", "1e3", "2.5",
]
_LAX_KINDS = [["bool"], ["int"], ["float"], ["str"], ["list"], ["dict"], ["none", "str"],
              ["list", "str"], ["int", "none"], ["dict", "none"], ["float", "none"]]
_PYDANTIC_VERDICTS = """
import json, sys
from typing import Union
import pydantic
T = {"bool": bool, "int": int, "float": float, "str": str, "list": list, "dict": dict,
     "none": type(None)}
out = []
for value, kinds in json.load(sys.stdin):
    adapter = pydantic.TypeAdapter(Union[tuple(T[k] for k in kinds)])
    try:
        adapter.validate_python(value)
        out.append(True)
    except pydantic.ValidationError:
        out.append(False)
print(json.dumps(out))
"""


def test_lax_accepts_never_rejects_what_pydantic_accepts(venv: GymVenv) -> None:
    """envkit's reading of pydantic's lax mode against the pydantic that Gym runs."""
    grid = [(value, kinds) for value in _LAX_VALUES for kinds in _LAX_KINDS]
    proc = subprocess.run(
        [str(venv.python), "-c", _PYDANTIC_VERDICTS], input=json.dumps(grid),
        capture_output=True, text=True, check=True, timeout=120,
    )
    verdicts = json.loads(proc.stdout)
    ours = [lax_accepts(value, frozenset(kinds)) for value, kinds in grid]
    false_rejects = [g for g, mine, theirs in zip(grid, ours, verdicts, strict=True)
                     if theirs and not mine]
    assert not false_rejects
    agree = sum(mine == theirs for mine, theirs in zip(ours, verdicts, strict=True))
    assert agree == len(grid), [g for g, m, t in zip(grid, ours, verdicts, strict=True) if m != t]


def test_gym_tree_sample_agrees(
    tree_packages: dict[str, Path], gym_results: dict[str, dict]
) -> None:
    """Gym's own server configs, packaged: envkit errors exactly where Gym rejects."""
    assert len(tree_packages) > 40
    disagree = []
    for name, pkg in tree_packages.items():
        errors, _ = _envkit(pkg)
        rejected = _gym_rejects(gym_results[name], pkg)
        if bool(errors) != bool(rejected):
            disagree.append(f"{name}: envkit {sorted(errors)}; gym: {rejected}")
    assert not disagree, "\n".join(disagree)
