"""Fast tests of the converter's refusals and their reasons: an env's verifiers pin, its
Requires-Python, secrets in --env-args, load failures by kind, the builder's own error text,
and where each pin came from. Each refusal leaves no output directory and no temp dir."""

from __future__ import annotations

import json
import shutil
import venv
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from support.paths import REPO_ROOT
from wheelfactory import make_wheel

from envkit.cli.app import cli
from envkit.converters.adapter_pkg import AdapterSpec, package_texts
from envkit.converters.env_args import EnvArgsError, literal_secrets, redacted, resolved
from envkit.converters.env_source import EnvWheel, builder_error
from envkit.converters.hub import parse_hub_id
from envkit.converters.sandbox import LoadError, run_loader
from envkit.converters.staging import stage
from envkit.converters.verifiers_pin import conflict_in_uv_message, pin_conflict
from envkit.converters.vf_closure import pin_sources
from envkit.converters.vf_load import build_settings, in_wheel, left_out, load_error
from envkit.converters.vf_request import ConvertRequest
from envkit.model.wheelfile import read_wheel
from envkit.supply.resolve import PinnedWheel

ROOT = REPO_ROOT
ENVS = ROOT / "fixtures" / "verifiers_envs"
BROKEN = ENVS / "broken"
LEFT_OUT = ENVS / "left-out"


def _convert(tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    result = CliRunner().invoke(cli, [
        "convert", "verifiers", "--out-dir", str(tmp_path / "out" / "pkg"),
        "--dataset-dir", str(tmp_path / "out" / "data"), *args,
    ], standalone_mode=False)
    return result.return_value, json.loads(result.stdout), result.stderr


def _nothing_left(tmp_path: Path) -> None:
    assert not (tmp_path / "out").exists()  # no PKG, no DATA, no temp dirs, no parent


# -- 1. an env that pins an older verifiers ---------------------------------------------

@pytest.mark.parametrize("pin", ["verifiers==0.1.5", "verifiers<0.2", "verifiers==0.2.0"])
def test_old_verifiers_pin_is_named_with_the_harness_version(tmp_path: Path, pin: str) -> None:
    wheel = make_wheel(tmp_path / "in", "old-pin", "0.1.0", requires=(pin,))
    rc, verdict, _ = _convert(tmp_path, "--hub-id", "envkit/old-pin", "--wheel", str(wheel))
    assert rc == 1
    message, hint = verdict["error"]["message"], verdict["error"]["hint"]
    assert f"pins an older verifiers ({pin!r})" in message
    assert "Gym 0.7.0's verifiers_agent runs verifiers 0.3.1" in message
    assert "v1" not in message and "< 0.4" not in hint
    assert "admits 0.3.1" in hint
    _nothing_left(tmp_path)


@pytest.mark.parametrize(("spec", "kind"), [
    (">=0.4", "v1"), ("==0.4.0", "v1"), ("==0.1.5", "older"), ("<0.2", "older"),
    ("==0.2.0", "older"), ("!=0.3.1", "other"), ("==0.3.2", "other"), (">=0.1,<0.4", None),
])
def test_pin_kinds(spec: str, kind: str | None) -> None:
    from packaging.specifiers import SpecifierSet

    found = pin_conflict(SpecifierSet(spec), "0.3.1", f"verifiers{spec}")
    assert (found.kind if found else None) == kind


def test_uv_refusal_for_an_old_pin_names_the_pin() -> None:
    uv = ("uv could not resolve the closure for x86_64: Because old-pin==0.1.0 depends on "
          "verifiers==0.1.5 and you require verifiers==0.3.1, we can conclude that your "
          "requirements are unsatisfiable.")
    who, conflict = conflict_in_uv_message(uv, "0.3.1")
    assert who == "old-pin==0.1.0" and conflict.kind == "older"
    assert conflict.requirement == "verifiers==0.1.5"


# -- 5. checked before anything runs: Requires-Python ------------------------------------

def test_requires_python_without_3_13_is_refused_before_resolution(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "in", "py312-only", "0.1.0", requires_python=">=3.10,<3.13",
                       requires=("verifiers>=0.1.9,<0.4",))
    rc, verdict, _ = _convert(tmp_path, "--hub-id", "envkit/py312-only", "--wheel", str(wheel))
    assert rc == 1
    assert "Requires-Python '>=3.10,<3.13'" in verdict["error"]["message"]
    assert "CPython 3.13." in verdict["error"]["message"]
    assert verdict["valid"] is False and "package" not in verdict  # the error object
    _nothing_left(tmp_path)


def test_staging_removes_the_parents_it_created(tmp_path: Path) -> None:
    with ExitStack() as stack:
        staged = stage(stack, tmp_path / "a" / "b" / "pkg")
        (staged / "x").write_text("y")
    assert sorted(tmp_path.iterdir()) == []


# -- 6. secrets in --env-args -------------------------------------------------------------

def test_literal_secret_is_refused_and_never_printed(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "in", "some-env", "0.1.0")
    rc, verdict, stderr = _convert(tmp_path, "--hub-id", "envkit/some-env", "--wheel",
                                   str(wheel), "--env-args",
                                   '{"api_key": "sk-live-123456", "judge": {"token": "t0k"}}')
    assert rc == 1
    assert "'api_key', 'judge.token'" in verdict["error"]["message"]
    assert "${oc.env:VAR}" in verdict["error"]["hint"]
    assert "--allow-literal-secrets" in verdict["error"]["hint"]
    everything = json.dumps(verdict) + stderr
    assert "sk-live-123456" not in everything and "t0k" not in everything
    _nothing_left(tmp_path)


def test_unset_env_reference_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "in", "some-env", "0.1.0")
    rc, verdict, _ = _convert(tmp_path, "--hub-id", "envkit/some-env", "--wheel", str(wheel),
                              "--env-args", '{"api_key": "${oc.env:ENVKIT_SURELY_UNSET_VAR}"}')
    assert rc == 1
    assert "ENVKIT_SURELY_UNSET_VAR is not set" in verdict["error"]["message"]
    _nothing_left(tmp_path)


def test_secret_rules() -> None:
    args = {"api_key": "${oc.env:K}", "base_url": "http://x", "num_examples": 3,
            "Password": "p", "nested": {"hf_token": "${oc.env:T,fallback}"},
            "keys": ["a"], "monkey_count": 2}
    assert literal_secrets(args) == ["Password", "keys[0]"]
    assert resolved(args, {"K": "sk-1"})["api_key"] == "sk-1"
    assert resolved(args, {"K": "sk-1"})["nested"] == {"hf_token": "fallback"}
    assert resolved({"u": "pre-${oc.env:K}-post"}, {"K": "v"}) == {"u": "pre-v-post"}
    shown = redacted(args)
    assert shown["api_key"] == "${oc.env:K}" and shown["Password"] == "***"
    assert shown["base_url"] == "http://x" and shown["keys"] == ["***"]
    with pytest.raises(EnvArgsError, match="K is not set"):
        resolved(args, {})


def test_env_reference_reaches_the_agent_config_verbatim() -> None:
    spec = AdapterSpec(name="e", hub_id="o/e", vf_env_id="e",
                       vf_env_args={"api_key": "${oc.env:JUDGE_API_KEY}"})
    agent = yaml.safe_load(package_texts(spec)["configs/verifiers_agent.yaml"])
    body = agent["verifiers_agent"]["responses_api_agents"]["verifiers_agent"]
    assert body["vf_env_args"] == {"api_key": "${oc.env:JUDGE_API_KEY}"}


# -- 3 and network: load failures by kind, in a bare venv ----------------------------------

@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv without verifiers: the broken fixture modules, and a stand-in ``fakevf``
    distribution (version 9.9.9) that lacks the name one module imports."""
    root = tmp_path_factory.mktemp("bare")
    venv.create(root / "venv", with_pip=False, symlinks=True)
    site = next((root / "venv" / "lib").glob("python3.*/site-packages"))
    for name in ("needs_network", "missing_dep"):
        shutil.copytree(BROKEN / name, site / name)
    (site / "fakevf").mkdir()
    (site / "fakevf" / "__init__.py").write_text("def other(): pass\n")
    info = site / "fakevf-9.9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakevf\nVersion: 9.9.9\n")
    (info / "RECORD").write_text("fakevf/__init__.py,,\n")
    (info / "top_level.txt").write_text("fakevf\n")
    (site / "lost_api.py").write_text("from fakevf import parse_response_messages\n")
    (site / "lost_attr.py").write_text(
        "import fakevf\ndef load_environment(**kw):\n    return fakevf.SelectConfig()\n")
    (site / "own_attr.py").write_text(
        "import own_attr\ndef load_environment(**kw):\n    return own_attr.nothing\n")
    (site / "obj_attr.py").write_text(
        "def load_environment(**kw):\n    return object().get_dataset\n")
    # a module __getattr__ with words of its own (verifiers 0.3.1's missing-extra message)
    (site / "fakextra.py").write_text(
        "def __getattr__(name):\n"
        "    raise AttributeError(f'To use fakextra.{name}, install as `fakextra[all]`. ')\n")
    (site / "extra_attr.py").write_text(
        "import fakextra\ndef load_environment(**kw):\n    return fakextra.Browser()\n")
    # verifiers 0.3.1's v1 SingleAgentEnv, by where its class comes from (the real one is
    # verifiers.v1.envs.single_agent.env.SingleAgentEnv; the slow test loads that one)
    (site / "v1_shim.py").write_text(
        "class Env: pass\nEnv.__module__ = 'verifiers.v1.env'\n"
        "class SingleAgentEnv(Env): pass\n"
        "SingleAgentEnv.__module__ = 'verifiers.v1.envs.single_agent.env'\n"
        "def load_environment(**kw):\n    return SingleAgentEnv()\n")
    return root / "venv" / "bin" / "python"


@pytest.mark.parametrize(("module", "kind", "text"), [
    ("lost_api", "api",
     "'lost_api' imports 'parse_response_messages' from 'fakevf', which fakevf 9.9.9 does "
     "not have"),
    ("missing_dep", "missing",
     "'missing_dep' imports 'envkit_undeclared_dependency', which no installed distribution "
     "provides"),
    ("needs_network", "network", "needs the network at load: datasets.envkit-fixture.invalid"),
    ("not_there", "module", "cannot import 'not_there'"),
    ("lost_attr", "api",
     "'lost_attr' uses 'SelectConfig' from 'fakevf', which fakevf 9.9.9 does not have"),
    ("own_attr", "load", "AttributeError: module 'own_attr' has no attribute 'nothing'"),
    ("extra_attr", "load",
     "AttributeError: To use fakextra.Browser, install as `fakextra[all]`."),
    ("obj_attr", "load", "AttributeError: 'object' object has no attribute 'get_dataset'"),
    ("v1_shim", "v1",
     "load_environment returned a SingleAgentEnv, a verifiers v1 class "
     "(verifiers.v1.envs.single_agent.env.SingleAgentEnv), not a classic verifiers Environment"),
])
def test_load_failures_name_their_cause(bare_venv: Path, tmp_path: Path, module: str,
                                        kind: str, text: str) -> None:
    with pytest.raises(LoadError) as err:
        run_loader(bare_venv, module, module, {}, tmp_path / "run", timeout=60)
    assert err.value.kind == kind
    assert text in str(err.value)
    assert "\n" not in str(err.value)  # one line


def test_env_args_never_reach_argv(bare_venv: Path, tmp_path: Path) -> None:
    site = next(bare_venv.parent.parent.glob("lib/python3.*/site-packages"))
    (site / "argv_echo.py").write_text(
        "import sys\ndef load_environment(**kw):\n"
        "    raise RuntimeError(repr(sys.argv) + '|' + kw['api_key'])\n")
    with pytest.raises(LoadError) as err:
        run_loader(bare_venv, "argv_echo", "argv_echo", {"api_key": "sk-secret-42"},
                   tmp_path / "run", timeout=60)
    argv, value = str(err.value).rsplit("|", 1)
    assert value == "sk-secret-42" and "sk-secret-42" not in argv
    assert not (tmp_path / "run" / "args.json").exists()


# -- 4. the builder's own words --------------------------------------------------------------

def test_builder_error_keeps_the_cause() -> None:
    output = ("Building wheel...\nTraceback (most recent call last):\n" + "  frame\n" * 40
              + "SystemExit: this package was renamed to 'hud'; install hud instead\n"
              "error: Failed to build `tombstone-1.0.tar.gz`\n  cause: The build backend "
              "returned an error\nhint: Build failures usually indicate a problem\n")
    text = builder_error(output)
    assert "renamed to 'hud'" in text and "Building wheel" not in text


# -- 2. where each pin came from ------------------------------------------------------------

def test_pin_sources_name_index_wheels_dir_and_files(tmp_path: Path) -> None:
    (tmp_path / "wh").mkdir()
    (tmp_path / "o.txt").write_text("prime-sandboxes==0.2.39\n")
    (tmp_path / "c.txt").write_text("tenacity<9.1  # older\n")
    req = ConvertRequest(hub_id="o/e", out_dir=tmp_path / "p", dataset_dir=tmp_path / "d",
                         overrides=(tmp_path / "o.txt",), constraints=(tmp_path / "c.txt",),
                         wheels_dirs=(tmp_path / "wh",))
    pins = [PinnedWheel("prime-sandboxes", "0.2.39", "p.whl", "https://files.example/p.whl",
                        None, ()),
            PinnedWheel("tenacity", "9.0.0", "t.whl", "https://files.example/t.whl", None, ()),
            PinnedWheel("helper", "1.0", "h.whl", (tmp_path / "wh" / "h.whl").as_uri(),
                        None, ())]
    sources = pin_sources(req, pins, "e", None)
    assert sources["prime-sandboxes"] == ("index files.example; --override o.txt: "
                                          "prime-sandboxes==0.2.39")
    assert sources["tenacity"] == "index files.example; --constraint c.txt: tenacity<9.1  # older"
    assert sources["helper"] == f"--wheels-dir {tmp_path / 'wh'}"


def test_unrelated_error_after_a_lookup_is_not_called_network(bare_venv: Path,
                                                              tmp_path: Path) -> None:
    site = next(bare_venv.parent.parent.glob("lib/python3.*/site-packages"))
    (site / "looked_up.py").write_text(
        "import socket\ndef load_environment(**kw):\n"
        "    try:\n        socket.getaddrinfo('datasets.envkit-fixture.invalid', 443)\n"
        "    except OSError:\n        pass\n"
        "    open('/nonexistent/envkit-rows.json')\n")
    with pytest.raises(LoadError) as err:
        run_loader(bare_venv, "looked_up", "looked_up", {}, tmp_path / "run", timeout=60)
    assert err.value.kind == "load" and "FileNotFoundError" in str(err.value)


# -- a module the env's own build leaves out of its wheel -----------------------------------

def _env_wheel(tmp_path: Path, files: dict[str, bytes]) -> EnvWheel:
    wheel = make_wheel(tmp_path / "whl", "left-out", "0.1.0", files=files)
    return EnvWheel(wheel, read_wheel(wheel, rel=wheel.name))


def test_left_out_sees_the_source_file_the_wheel_lacks(tmp_path: Path) -> None:
    main_only = _env_wheel(tmp_path, {"left_out.py": b""}).path
    assert left_out(LEFT_OUT, main_only, "left_out_prompts") == "left_out_prompts.py"
    assert left_out(LEFT_OUT, main_only, "left_out") is None  # in the wheel
    assert left_out(LEFT_OUT, main_only, "numpy") is None  # not in the tree: a dependency
    src = tmp_path / "tree"
    (src / "src" / "my_env" / "tools").mkdir(parents=True)
    (src / "src" / "my_env" / "tools" / "grid.py").write_text("")
    wheel = make_wheel(tmp_path / "w2", "my-env", files={"my_env/__init__.py": b""})
    assert left_out(src, wheel, "my_env.tools") == "src/my_env/tools/"  # a namespace dir
    assert in_wheel(wheel, "my_env") and not in_wheel(wheel, "my_env.tools")


@pytest.mark.parametrize(("pyproject", "where"), [
    (LEFT_OUT / "pyproject.toml", "[tool.setuptools] packages / py-modules"),
    ('[build-system]\nbuild-backend = "hatchling.build"\n',
     "[tool.hatch.build.targets.wheel] packages / include in pyproject.toml"),
    ("[project]\nname = 'x'\n", "[tool.setuptools]"),  # no backend: setuptools' legacy default
    (None, "packages / py_modules in setup.py"),
])
def test_build_settings_name_the_backends_table(tmp_path: Path, pyproject: Path | str | None,
                                                where: str) -> None:
    if isinstance(pyproject, Path):
        pyproject = pyproject.read_text()
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    assert where in build_settings(tmp_path)


def _req(tmp_path: Path, **kw: object) -> ConvertRequest:
    return ConvertRequest(hub_id="envkit/left-out", out_dir=tmp_path / "p",
                          dataset_dir=tmp_path / "d", **kw)  # type: ignore[arg-type]


def _missing() -> LoadError:
    return LoadError("missing", "'left_out' imports 'left_out_prompts', which no installed "
                     "distribution provides (No module named 'left_out_prompts') "
                     "(at left_out.py:8)", missing="left_out_prompts")


def test_left_out_module_points_at_the_build_config_with_source(tmp_path: Path) -> None:
    wheel = _env_wheel(tmp_path, {"left_out.py": b""})
    err = load_error(_missing(), _req(tmp_path, source=LEFT_OUT),
                     parse_hub_id("envkit/left-out"), wheel)
    assert str(err) == ("loading 'left-out' failed: 'left_out' imports 'left_out_prompts', "
                        "which is in the source tree (left_out_prompts.py) but not in the wheel "
                        "its build makes (left_out-0.1.0-py3-none-any.whl) (at left_out.py:8)")
    assert "Requires-Dist" not in err.hint
    assert "include it with [tool.setuptools] packages / py-modules" in err.hint


def test_left_out_main_module_is_named_once(tmp_path: Path) -> None:
    made = make_wheel(tmp_path / "whl", "leftout", "0.1.0", files={"left_out_prompts.py": b""})
    wheel = EnvWheel(made, read_wheel(made, rel=made.name))  # its package is 'leftout'
    exc = LoadError("module", "cannot import 'left_out': No module named 'left_out'",
                    missing="left_out")
    err = load_error(exc, _req(tmp_path, source=LEFT_OUT), parse_hub_id("envkit/left-out"),
                     wheel)
    assert str(err) == ("loading 'left-out' failed: module 'left_out', which is in the source "
                        "tree (left_out.py) but not in the wheel its build makes "
                        "(leftout-0.1.0-py3-none-any.whl)")
    assert "include it with [tool.setuptools] packages / py-modules" in err.hint


def test_own_submodule_in_neither_wheel_nor_tree_is_a_bad_import(tmp_path: Path) -> None:
    wheel = _env_wheel(tmp_path, {"left_out.py": b""})
    exc = LoadError("module", "cannot import 'left_out': No module named 'left_out.tools' "
                    "(at left_out.py:3)", missing="left_out.tools")
    err = load_error(exc, _req(tmp_path, source=LEFT_OUT), parse_hub_id("envkit/left-out"),
                     wheel)
    assert str(err) == ("loading 'left-out' failed: 'left_out' imports 'left_out.tools', which "
                        "neither its wheel nor the source tree has (at left_out.py:3)")
    assert "fix the import" in err.hint and "named after the hub id" not in err.hint


def test_undeclared_dependency_still_points_at_requires_dist(tmp_path: Path) -> None:
    wheel = _env_wheel(tmp_path, {"left_out.py": b"", "left_out_prompts.py": b""})
    for req in (_req(tmp_path, source=LEFT_OUT), _req(tmp_path)):  # in the wheel / no tree
        err = load_error(_missing(), req, parse_hub_id("envkit/left-out"), wheel)
        assert "which no installed distribution provides" in str(err)
        assert "add it to its Requires-Dist, or add its wheel with --wheels-dir" in err.hint


def test_own_submodule_missing_from_the_wheel_is_the_build_without_source(
        tmp_path: Path) -> None:
    wheel = _env_wheel(tmp_path, {"left_out/__init__.py": b""})
    exc = LoadError("module", "cannot import 'left_out': No module named 'left_out.tools'",
                    missing="left_out.tools")
    err = load_error(exc, _req(tmp_path), parse_hub_id("envkit/left-out"), wheel)
    assert "a module of the environment's own package that its wheel" in str(err)
    assert "named after the hub id" not in err.hint and "build config" in err.hint
    assert "--source DIR" in err.hint


def test_api_of_another_dependency_release_is_pinned_not_blamed_on_verifiers(
        tmp_path: Path) -> None:
    hub = parse_hub_id("envkit/lost-attr")
    other = LoadError("api", "'lost_attr' uses 'x' from 'numpy', which numpy 2.3.0 does not have")
    assert "--override FILE" in load_error(other, _req(tmp_path), hub, None).hint
    vf = LoadError("api", "'lost_attr' uses 'SelectConfig' from 'verifiers.legacy', which "
                   "verifiers 0.3.1 does not have")
    hint = load_error(vf, _req(tmp_path), hub, None).hint
    assert "an API of another verifiers release" in hint
    assert "written for verifiers 0.3.1 (Gym 0.7.0's verifiers_agent)" in hint


def test_v1_shim_hint_names_what_verifiers_agent_needs(tmp_path: Path) -> None:
    exc = LoadError("v1", "load_environment returned a SingleAgentEnv, a verifiers v1 class "
                    "(verifiers.v1.envs.single_agent.env.SingleAgentEnv), not a classic "
                    "verifiers Environment")
    hint = load_error(exc, _req(tmp_path), parse_hub_id("envkit/v1-shim"), None).hint
    assert "must return a classic vf.Environment" in hint and "wheels-v1" in hint


# -- verifiers 0.4: no route yet ------------------------------------------------------------

def test_v1_only_env_is_told_there_is_no_route_yet(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "in", "v1-taskset", "0.1.0", requires=("verifiers>=0.4",))
    rc, verdict, _ = _convert(tmp_path, "--hub-id", "envkit/v1-taskset", "--wheel", str(wheel))
    assert rc == 1
    message, hint = verdict["error"]["message"], verdict["error"]["hint"]
    assert ("is written for the verifiers v1 API (it requires 'verifiers>=0.4'): verifiers 0.4 "
            "removed the classic API (vf.load_environment, Environment.run_group) that Gym "
            "0.7.0's verifiers_agent calls (it runs verifiers 0.3.1)") in message
    assert "no conversion route yet" in hint and "wheels-v1" in hint
    assert "use a release" not in hint  # none exists for a verifiers 0.4 environment
    _nothing_left(tmp_path)


def test_sandbox_hint_and_the_verifiers_guide_give_the_same_prime_sandboxes_floor() -> None:
    from envkit.converters.vf_load import _known_hint

    hint = _known_hint("ValidationError: CreateSandboxRequest start_command")
    guide = " ".join((ROOT / "docs" / "verifiers.md").read_text().split())
    assert hint is not None
    assert "every prime-sandboxes release verifiers 0.3.1 admits (>= 0.2.39) refuses" in hint
    assert "every prime-sandboxes release verifiers 0.3.1 admits (>= 0.2.39) refuses" in guide
    assert "'prime-sandboxes==0.2.35'" in hint and "`prime-sandboxes==0.2.35`" in guide
