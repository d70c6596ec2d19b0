"""Fast tests of ``envkit convert verifiers``: hub ids, rows, split, package text, API checks,
the sandboxed loader (with stand-in modules and a bare venv) and the CLI's refusals."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from support.paths import REPO_ROOT
from wheelfactory import make_wheel

from envkit.cli.app import cli
from envkit.converters.adapter_pkg import AdapterSpec, lock_data, package_texts
from envkit.converters.hub import HubIdError, parse_hub_id
from envkit.converters.rows import SplitError, build_row, build_rows, split_rows
from envkit.converters.sandbox import LoadError, run_loader
from envkit.converters.verifiers import GYM_VERIFIERS_VERSION, ConvertError, ConvertRequest
from envkit.converters.verifiers import _check_request as check_request
from envkit.converters.verifiers_pin import requires_conflict
from envkit.model.lock import LockedWheel
from envkit.model.target import Target
from envkit.model.wheelfile import read_wheel
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions

ROOT = REPO_ROOT
HOSTILE = ROOT / "fixtures" / "verifiers_envs" / "hostile"

PROMPT = [
    {"role": "system", "content": "Reverse the text."},
    {"role": "user", "content": "stressed"},
    {"role": "assistant", "content": "<answer>desserts</answer>"},
    {"role": "user", "content": "drawer"},
]


# -- hub ids -------------------------------------------------------------------------------

@pytest.mark.parametrize(("hub_id", "dist", "module", "index"), [
    ("primeintellect/ascii-tree", "ascii_tree", "ascii_tree",
     "https://hub.primeintellect.ai/primeintellect/simple/"),
    ("Owner/My-Env.2", "my_env.2", "My_Env.2", "https://hub.primeintellect.ai/Owner/simple/"),
])
def test_hub_id_maps_to_index_dist_and_module(
    hub_id: str, dist: str, module: str, index: str
) -> None:
    ref = parse_hub_id(hub_id)
    assert (ref.dist_name, ref.module, ref.index_url) == (dist, module, index)
    assert ref.vf_env_id == hub_id.split("/")[1]
    assert ref.requirement("0.1.5") == f"{dist}==0.1.5"
    assert ref.requirement(None) == dist


@pytest.mark.parametrize("bad", ["ascii-tree", "a/b/c", "/x", "x/", "own er/x", ""])
def test_bad_hub_id_is_refused(bad: str) -> None:
    with pytest.raises(HubIdError, match="owner/name"):
        parse_hub_id(bad)


# -- rows ----------------------------------------------------------------------------------

def test_row_keeps_the_formatted_prompt_and_routes_to_verifiers_agent() -> None:
    example = {"prompt": PROMPT, "answer": "reward", "task": "rev", "example_id": 7,
               "info": '{"k": 1}'}
    row = build_row(3, example, "reverse-text")
    assert row == {
        "task_idx": 3,
        "vf_env_id": "reverse-text",
        "responses_create_params": {"input": PROMPT},
        "agent_ref": {"type": "responses_api_agents", "name": "verifiers_agent"},
        "question": "drawer",
        "answer": "reward",
        "task": "rev",
        "example_id": 7,
        "info": {"k": 1},
    }


def test_row_defaults_for_sparse_examples() -> None:
    row = build_row(0, {"prompt": "hi"}, "env")
    assert row["responses_create_params"]["input"] == [{"role": "user", "content": "hi"}]
    assert (row["answer"], row["task"], row["example_id"], row["info"]) == ("", "env", 0, {})


def _rows(n: int) -> list[dict]:
    return build_rows([{"prompt": [{"role": "user", "content": str(i)}]} for i in range(n)], "e")


def test_split_is_deterministic_and_disjoint() -> None:
    rows = _rows(50)
    a, b = split_rows(rows, 0.2, seed=1), split_rows(rows, 0.2, seed=1)
    assert a == b
    assert len(a.validation) == 10 and len(a.training) == 40
    ids = [r["task_idx"] for r in a.training + a.validation]
    assert sorted(ids) == list(range(50))
    assert [r["task_idx"] for r in a.training] == sorted(r["task_idx"] for r in a.training)
    assert split_rows(rows, 0.2, seed=2).validation != a.validation


def test_split_zero_fraction_keeps_everything_for_training() -> None:
    split = split_rows(_rows(3), 0.0, seed=0)
    assert (len(split.training), split.validation) == (3, [])


def test_split_small_fraction_still_gives_one_validation_row() -> None:
    assert len(split_rows(_rows(5), 0.01, seed=0).validation) == 1


@pytest.mark.parametrize(("n", "fraction"), [(1, 0.5), (1, 0.01), (10, 1.0), (10, -0.1)])
def test_split_refuses_to_leave_no_training_rows(n: int, fraction: float) -> None:
    with pytest.raises(SplitError, match="validation-fraction"):
        split_rows(_rows(n), fraction, seed=0)


# -- package text --------------------------------------------------------------------------

def _write_package(tmp_path: Path, spec: AdapterSpec) -> Path:
    pkg = tmp_path / "pkg"
    for rel, text in package_texts(spec).items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    make_wheel(pkg / "wheels", "reverse-text", "0.1.0", requires=("verifiers>=0.1",))
    make_wheel(pkg / "wheels", "verifiers", GYM_VERIFIERS_VERSION)
    return pkg


def test_written_package_shape(tmp_path: Path) -> None:
    spec = AdapterSpec(name="reverse-text", hub_id="envkit/reverse-text",
                       vf_env_id="reverse-text", vf_env_args={"num_examples": 5})
    pkg = _write_package(tmp_path, spec)
    manifest = yaml.safe_load((pkg / "nemo-environment.yaml").read_text())
    assert manifest["format"] == "adapter-wheels-v1"
    assert manifest["config_paths"][0] == "configs/policy_model.yaml"
    assert manifest["adapter"] == {"agent": "verifiers_agent", "agent_type": "responses_api_agents"}
    assert manifest["metadata"]["vf_env_id"] == "reverse-text"
    agent = yaml.safe_load((pkg / "configs/verifiers_agent.yaml").read_text())
    body = agent["verifiers_agent"]["responses_api_agents"]["verifiers_agent"]
    assert body["vf_env_args"] == {"num_examples": 5}
    assert "domain" not in body  # seed 000: agent blocks carry no domain
    assert body["model_server"] == {"type": "responses_api_models", "name": "policy_model"}
    relay = agent["verifiers_agent_environment_server"]["environment_servers"]["legacy_agent"]
    assert relay["agent_server"]["name"] == "verifiers_agent"
    policy = yaml.safe_load((pkg / "configs/policy_model.yaml").read_text())
    assert policy["policy_model"]["responses_api_models"]["vllm_model"]["uses_reasoning_parser"]


def test_written_package_and_rows_validate_clean(tmp_path: Path) -> None:
    spec = AdapterSpec(name="reverse-text", hub_id="envkit/reverse-text", vf_env_id="reverse-text")
    pkg = _write_package(tmp_path, spec)
    data = tmp_path / "data"
    data.mkdir()
    rows = build_rows([{"prompt": PROMPT, "answer": "x"}] * 3, "reverse-text")
    (data / "training.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = validate(ValidateRequest(package=pkg, dataset=data,
                                      options=CheckOptions(target=Target(glibc=(2, 28)))))
    assert report.valid, report.diagnostics
    assert not report.warnings, report.warnings


def test_lock_has_envkit_builds_shape() -> None:
    wheels = [LockedWheel("verifiers", "0.3.1", "verifiers-0.3.1-py3-none-any.whl",
                          "https://files.example/verifiers-0.3.1-py3-none-any.whl", "ab" * 32,
                          ("requirement: verifiers==0.3.1",)),
              LockedWheel("env", "1", "env-1-py3-none-any.whl", "file:///tmp/x/env.whl", None)]
    lock = lock_data(wheels, "cp313-manylinux_2_28_x86_64", ["env==1"], "uv 0.13").to_dict()
    assert (lock["version"], lock["target"]) == ("1.0", "cp313-manylinux_2_28_x86_64")
    assert lock["requirements"] == [{"requirement": "env==1", "from": ["envkit convert verifiers"]}]
    by_name = {w["name"]: w for w in lock["wheels"]}
    assert by_name["verifiers"]["sha256"] == "ab" * 32
    assert by_name["verifiers"]["requested_by"] == ["requirement: verifiers==0.3.1"]
    assert by_name["env"]["url"] is None  # a temp dir's file: URL is not kept
    assert json.loads(json.dumps(lock)) == lock


# -- verifiers API generations -------------------------------------------------------------

@pytest.mark.gym
def test_gym_pin_matches_the_installed_gym() -> None:
    """Slow: builds (or reuses) envkit's cached nemo-gym venv and reads its harness."""
    from envkit.gym.harness import find_built_in
    from envkit.gym.venv import ensure_gym_venv

    harness = find_built_in(ensure_gym_venv(allow_python_override=True).root, "verifiers_agent")
    assert f"@v{GYM_VERIFIERS_VERSION}" in (harness / "requirements.txt").read_text()


@pytest.mark.parametrize(("requires", "conflict"), [
    (("verifiers>=0.4",), True),
    (("verifiers==0.4.0",), True),
    (("verifiers>=0.1.9,<0.4",), False),
    (("verifiers",), False),
    (("verifiers>=0.4; extra == 'v1'",), False),
    (("datasets>=3",), False),
])
def test_v1_only_requirement_is_detected(tmp_path: Path, requires: tuple, conflict: bool) -> None:
    meta = read_wheel(make_wheel(tmp_path, "some-env", "1.0", requires=requires))
    found = requires_conflict(meta.requires_dist, GYM_VERIFIERS_VERSION)
    assert bool(found) is conflict
    if conflict:
        assert found.kind == "v1" and "v1 API" in found.message("w", "0.7.0")


def _request(tmp_path: Path, **kw: object) -> ConvertRequest:
    base = {"hub_id": "o/e", "out_dir": tmp_path / "pkg", "dataset_dir": tmp_path / "data",
            "hub_version": "1.0"}
    return ConvertRequest(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(("changes", "message"), [
    ({"verifiers_version": "0.4.0"}, "only the v1 API"),
    ({"hub_version": None}, "--hub-version is not set"),
    ({"dataset_dir": "IN_PKG"}, "non-nested"),
    ({"wheel": Path("a.whl"), "source": Path("src")}, "at most one"),
])
def test_request_refusals(tmp_path: Path, changes: dict, message: str) -> None:
    if changes.get("dataset_dir") == "IN_PKG":
        changes["dataset_dir"] = tmp_path / "pkg" / "data"
    with pytest.raises(ConvertError, match=message):
        check_request(_request(tmp_path, **changes))


def test_existing_output_needs_force(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    with pytest.raises(ConvertError, match="already exists") as err:
        check_request(_request(tmp_path))
    assert "--force" in err.value.hint
    check_request(_request(tmp_path, force=True))


def test_v1_only_wheel_is_refused_before_any_resolution(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "in", "v1-taskset", "0.1.0", requires=("verifiers>=0.4",))
    result = CliRunner().invoke(cli, [
        "convert", "verifiers", "--hub-id", "envkit/v1-taskset", "--wheel", str(wheel),
        "--out-dir", str(tmp_path / "pkg"), "--dataset-dir", str(tmp_path / "data"),
    ], standalone_mode=False)
    assert result.return_value == 1
    verdict = json.loads(result.stdout)
    assert verdict["valid"] is False
    assert "verifiers v1 API" in verdict["error"]["message"]
    assert not (tmp_path / "pkg").exists() and not (tmp_path / "data").exists()
    assert not list(tmp_path.glob(".envkit-*"))


def test_cli_refuses_unpinned_hub_release(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [
        "convert", "verifiers", "--hub-id", "primeintellect/ascii-tree",
        "--out-dir", str(tmp_path / "pkg"), "--dataset-dir", str(tmp_path / "data"),
    ], standalone_mode=False)
    assert result.return_value == 1
    assert "--allow-latest" in result.stderr
    assert not (tmp_path / "pkg").exists()


def test_cli_rejects_non_object_env_args(tmp_path: Path) -> None:
    from envkit.cli import main

    rc = main(["convert", "verifiers", "--hub-id", "o/e", "--hub-version", "1",
               "--out-dir", str(tmp_path / "p"), "--dataset-dir", str(tmp_path / "d"),
               "--env-args", "[1, 2]"])
    assert rc == 2


# -- the sandboxed loader, with stand-in modules in a bare venv -----------------------------

@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv without verifiers holding the hostile modules that never import it."""
    root = tmp_path_factory.mktemp("bare")
    venv.create(root / "venv", with_pip=False, symlinks=True)
    site = next((root / "venv" / "lib").glob("python3.*/site-packages"))
    for name in ("hostile_raise", "hostile_hang", "hostile_escape"):
        shutil.copytree(HOSTILE / name, site / name)
    (site / "printer.py").write_text(
        "import sys\nprint('{\"ok\": true, \"examples\": []}')\n"
        "def load_environment(**kw):\n    print('noise'); raise ValueError('after printing')\n"
    )
    (site / "taskset_only.py").write_text(
        "__all__ = ['T']\nclass Base: pass\nBase.__module__ = 'verifiers.v1.taskset'\n"
        "class T(Base): pass\n"
    )
    return root / "venv" / "bin" / "python"


@pytest.mark.parametrize(("module", "kind", "text"), [
    ("hostile_raise", "load", "needs an API key"),
    ("printer", "load", "after printing"),
    ("taskset_only", "v1", "no load_environment"),
    ("no_such_env", "module", "cannot import"),
])
def test_loader_reports_failures_by_kind(bare_venv: Path, tmp_path: Path, module: str,
                                         kind: str, text: str) -> None:
    with pytest.raises(LoadError, match=text) as err:
        run_loader(bare_venv, module, module, {}, tmp_path / "run", timeout=60)
    assert err.value.kind == kind


def test_loader_stdout_never_reaches_the_protocol(bare_venv: Path, tmp_path: Path) -> None:
    with pytest.raises(LoadError) as err:
        run_loader(bare_venv, "printer", "printer", {}, tmp_path / "run", timeout=60)
    assert "noise" in err.value.log and '"ok": true' in err.value.log


def test_loader_hang_is_killed_at_the_timeout(bare_venv: Path, tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="did not finish within 2 s") as err:
        run_loader(bare_venv, "hostile_hang", "hostile_hang", {}, tmp_path / "run", timeout=2)
    assert err.value.kind == "timeout"


def test_loader_refuses_writes_outside_its_temp_dir(bare_venv: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "escaped.txt"
    outside.parent.mkdir()
    with pytest.raises(LoadError, match=r"escaped\.txt") as err:
        run_loader(bare_venv, "hostile_escape", "hostile_escape", {"target": str(outside)},
                   tmp_path / "run", timeout=60)
    assert err.value.kind == "escape"
    assert not outside.exists()


def test_loader_runs_with_a_temp_home(bare_venv: Path, tmp_path: Path) -> None:
    site = next(bare_venv.parent.parent.glob("lib/python3.*/site-packages"))
    (site / "whereami.py").write_text(
        "import os, pathlib\n"
        "def load_environment(**kw):\n"
        "    pathlib.Path(os.environ['HOME'], 'ok').write_text('x')\n"
        "    raise RuntimeError(os.environ['HOME'] + '|' + os.getcwd())\n"
    )
    with pytest.raises(LoadError) as err:
        run_loader(bare_venv, "whereami", "whereami", {}, tmp_path / "run", timeout=60)
    home, cwd = str(err.value).split(": ", 1)[1].split("|")
    assert Path(home).is_relative_to(tmp_path / "run") and Path(cwd) == Path(home)


def test_loader_file_runs_on_stdlib_only() -> None:
    loader = ROOT / "converters" / "_vf_loader.py"
    proc = subprocess.run([sys.executable, "-I", str(loader), "--help"], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0 and "--module" in proc.stdout


@pytest.mark.parametrize(("message", "hint"), [
    ("Failed to fetch: https://hub.example/simple/x/ cause: dns error", "could not be reached"),
    ("Because env==1 depends on verifiers>=0.4 ... requirements are unsatisfiable",
     "has no conversion route yet"),
    ("pyzmq>=27.1.0 has no usable wheels", "raise --glibc"),
])
def test_resolver_failures_get_a_matching_hint(message: str, hint: str) -> None:
    from envkit.converters.vf_closure import resolve_hint

    assert hint in resolve_hint(message, Target(glibc=(2, 28)))


def test_temp_dirs_of_killed_conversions_are_removed(tmp_path: Path) -> None:
    from envkit.converters.staging import remove_stale as _remove_stale

    dead = tmp_path / ".envkit-tmp-pkg-999999999-abc"  # no such pid
    (dead / "wheels").mkdir(parents=True)
    other = tmp_path / "unrelated"
    other.mkdir()
    _remove_stale(tmp_path / "pkg", tmp_path / "data")
    assert not dead.exists() and other.exists()


def test_not_a_wheel_is_a_clean_error(tmp_path: Path) -> None:
    bad = tmp_path / "env-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    result = CliRunner().invoke(cli, [
        "convert", "verifiers", "--hub-id", "o/env", "--wheel", str(bad),
        "--out-dir", str(tmp_path / "pkg"), "--dataset-dir", str(tmp_path / "data"),
    ], standalone_mode=False)
    assert result.return_value == 1
    assert "not a usable wheel" in json.loads(result.stdout)["error"]["message"]
    assert not (tmp_path / "pkg").exists()
