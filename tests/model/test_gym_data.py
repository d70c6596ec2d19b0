"""The pinned Gym version is written once, and the generated Gym facts were read off it."""

from __future__ import annotations

import json
from importlib import resources

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
