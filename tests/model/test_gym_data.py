"""The pinned Gym version is written once, and the generated Gym facts were read off it."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from envkit.model.gym_data import DEFAULT_GYM_VERSION, gym_data, runtime_requirements


def test_generated_data_matches_the_pinned_gym_version() -> None:
    assert gym_data().version == DEFAULT_GYM_VERSION
    text = resources.files("envkit").joinpath("data/gym_configs.json").read_text("utf-8")
    assert json.loads(text)["nemo_gym_version"] == DEFAULT_GYM_VERSION


def test_runtime_requirements_pin_gym_and_its_own_pins() -> None:
    reqs = runtime_requirements(DEFAULT_GYM_VERSION)
    assert reqs[0] == f"nemo-gym=={DEFAULT_GYM_VERSION}"
    assert reqs[-1] == "pip"
    assert {r.split("[")[0].split("=")[0].split("<")[0].split(">")[0] for r in reqs[1:-1]} == {
        "ray", "openai"}


def test_each_builtin_config_is_read_from_its_own_line_as_the_whole_file_has_it() -> None:
    """The file holds one config per line (``scripts/gen_gym_configs.py``' layout), so a run
    parses only the configs a package pulls in; each is what parsing the whole file gives."""
    from envkit.model.gym_data import _builtin_config_texts, builtin_config, is_builtin_config

    text = resources.files("envkit").joinpath("data/gym_configs.json").read_text("utf-8")
    whole = json.loads(text)["configs"]
    assert text.startswith('{"configs": {\n') and text.count("\n") == len(whole) + 3
    lines = _builtin_config_texts()
    assert list(lines) == list(whole)
    for path, config in whole.items():
        assert json.loads(lines[path]) == config == builtin_config(path)
    assert builtin_config("not/shipped.yaml") is None
    assert not is_builtin_config("not/shipped.yaml") and is_builtin_config(next(iter(whole)))


def test_the_generator_writes_that_layout() -> None:
    import importlib.util

    from support.paths import REPO_ROOT

    spec = importlib.util.spec_from_file_location(
        "gen_gym_configs", REPO_ROOT / "scripts" / "gen_gym_configs.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    text = resources.files("envkit").joinpath("data/gym_configs.json").read_text("utf-8")
    data = json.loads(text)
    assert generator.layout(data["configs"], data["nemo_gym_version"]) == text


def test_another_layout_of_the_same_json_is_read_whole(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from envkit.model import gym_data as module

    configs = {"a/b.yaml": {"includes": [], "keys": ["x"], "servers": {}}, "c\\\\d.yaml": {}}
    (tmp_path / "gym_configs.json").write_text(json.dumps({"configs": configs}))
    monkeypatch.setattr(module, "_DATA", tmp_path)
    module._builtin_config_texts.cache_clear()
    try:
        assert {p: module.builtin_config(p) for p in configs} == configs
    finally:
        module._builtin_config_texts.cache_clear()
