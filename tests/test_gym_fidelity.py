"""envkit's EK3xx verdicts against the REAL nemo-gym config machinery.

Every EK3xx fixture, the valid fixtures and a set of edge-case variants are loaded by
``tests/gym_probe.py`` inside the cached Gym venv (one subprocess for all of them): Gym's own
``GlobalConfigDictParser.parse`` with cwd = the package root, then the server directory
``gym env start`` would run. envkit must report an EK3xx error exactly where Gym rejects the
package, and warnings only where Gym accepts it.
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

from envkit.gymvenv import GymVenv, ensure_gym_venv
from envkit.validate import ValidateRequest, validate

ROOT = Path(__file__).resolve().parent.parent
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
from gym_tree_packages import build_tree_packages, site_packages  # noqa: E402

pytestmark = pytest.mark.slow

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

    That is: the parse aborts, a server has no directory or entrypoint, or Gym silently runs a
    built-in in place of a directory the package ships code in (EK309).
    """
    if not result["ok"]:
        return f"{result['error_type']}: {result['error'][:300]}"
    for server in result["servers"]:
        if server["dir"] == "missing":
            return f"{server['name']}: no server dir for {server['type']}/{server['impl']}"
        if not server["entrypoint_exists"]:
            return f"{server['name']}: entrypoint missing in {server['dir']} dir"
        if server["shadowed"] and _holds_code(pkg, server):
            return f"{server['name']}: Gym runs its built-in {server['impl']}, not the package's"
    return None


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
        [str(venv.python), str(Path(__file__).with_name("gym_probe.py"))],
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
