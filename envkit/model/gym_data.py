"""Facts about the nemo-gym release the training image runs, generated from its wheel.

``envkit/data/gym.json`` is written by ``scripts/gen_gym_data.py``; never edit it by hand.
``DEFAULT_GYM_VERSION`` is the one place the pinned release is written: every default,
runtime pin and docstring derives from it (``tests/model/test_gym_data.py`` checks the generated
data was read off that same release).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_GYM_VERSION",
    "GymData",
    "ServerModel",
    "builtin_config",
    "gym_data",
    "is_builtin_config",
    "runtime_requirements",
]

DEFAULT_GYM_VERSION = "0.7.0"
"""The pinned Gym version: the nemo-gym release the training image runs."""

_DATA = Path(__file__).resolve().parent.parent / "data"
"""A plain path, not ``importlib.resources``, whose imports every command would pay at start."""


@dataclass(frozen=True, slots=True)
class ServerModel:
    """The pydantic config model a built-in server validates its block with when it starts,
    read off the real class by ``scripts/gym_server_models.py``: ``required`` is what pydantic
    reports missing for a block with only Gym's own fields; ``fields`` maps each other field
    to the simple types it accepts, or None where its type is beyond a sure check.
    """

    model: str
    required: tuple[str, ...]
    fields: dict[str, frozenset[str] | None]
    coerce_numbers_to_str: bool = False
    strict: bool = False


def _server_model(raw: dict[str, Any]) -> ServerModel | None:
    if "unknown" in raw:
        return None
    return ServerModel(
        model=raw["model"],
        required=tuple(raw["required"]),
        fields={k: frozenset(v) if v is not None else None for k, v in raw["fields"].items()},
        coerce_numbers_to_str=bool(raw.get("coerce_numbers_to_str")),
        strict=bool(raw.get("strict")),
    )


@dataclass(frozen=True, slots=True)
class GymData:
    """What one Gym version fixes for its configs (from the wheel's summary, not an install):
    its Python and dependency pins, the domains, dataset types and licenses it accepts, and the
    servers it ships (by type) with their config models."""

    version: str
    requires_python: str
    requires_dist: tuple[str, ...]
    domains: frozenset[str]
    dataset_types: frozenset[str]
    dataset_licenses: tuple[str, ...]
    builtins: dict[str, frozenset[str]]
    benchmark_dataset_types: frozenset[str] = frozenset()
    """``datasets[].type`` values of Gym's ``BenchmarkDatasetConfig`` (need ``prepare_script``)."""
    builtin_server_dirs: frozenset[str] = frozenset()
    """``<type>/<impl>[/<sub>]`` directories Gym's install root holds with an install marker:
    what ``_resolve_server_dir`` finds there (implementation keys may contain ``/``)."""
    reserved_top_level_keys: frozenset[str] = frozenset()
    """Top-level config keys Gym never treats as server instances (``config_paths`` ...)."""
    runtime_keys: frozenset[str] = frozenset()
    """Top-level keys Gym's parser fills in itself (``head_server``, ``port_range_low`` ...)."""
    runtime_keys_for_fields: frozenset[str] = frozenset()
    """The subset already set when Gym resolves a server's direct fields during parse."""
    builtin_server_installs: dict[str, tuple[str, str]] = field(default_factory=dict)
    """``{"<type>/<impl>": (marker file name, trimmed text)}``: what Gym builds a built-in
    server's venv from (``validate --offline`` walks it when the package does not ship it)."""
    server_models: dict[str, dict[str, ServerModel | None]] = field(default_factory=dict)
    """``{"<type>/<impl>": {entrypoint: model}}`` for built-in servers; None where the
    entrypoint could not be imported in a plain Gym venv (its model is unknown)."""

    def server_model(self, server_type: str, impl: str, entrypoint: str) -> ServerModel | None:
        """The config model Gym's built-in ``<type>/<impl>/<entrypoint>`` validates with."""
        return self.server_models.get(f"{server_type}/{impl}", {}).get(entrypoint)

    def python_floor(self, python: tuple[int, int]) -> str | None:
        """The patch floor Gym's ``Requires-Python`` puts on ``python`` (``>=3.13.14``), else
        None. The image's 3.13 satisfies it, so a resolution for the target uses this floor:
        plain ``3.13`` (= 3.13.0) would wrongly reject nemo-gym."""
        from packaging.specifiers import SpecifierSet  # not on validate's small-package path

        for spec in SpecifierSet(self.requires_python):
            if spec.operator == ">=" and tuple(map(int, spec.version.split(".")[:2])) == python:
                return spec.version
        return None

    def is_builtin(self, server_type: str, name: str) -> bool:
        if "/" in name:
            return f"{server_type}/{name}" in self.builtin_server_dirs
        return name in self.builtins.get(server_type, frozenset())


@cache
def gym_data() -> GymData:
    raw = json.loads((_DATA / "gym.json").read_text("utf-8"))
    return GymData(
        version=raw["nemo_gym_version"],
        requires_python=raw["requires_python"],
        requires_dist=tuple(raw["requires_dist"]),
        domains=frozenset(raw["domains"]),
        dataset_types=frozenset(raw["dataset_types"]),
        dataset_licenses=tuple(raw["dataset_licenses"]),
        builtins={k: frozenset(v) for k, v in raw["builtins"].items()},
        benchmark_dataset_types=frozenset(raw.get("benchmark_dataset_types", ())),
        builtin_server_dirs=frozenset(raw.get("builtin_server_dirs", ())),
        reserved_top_level_keys=frozenset(raw.get("reserved_top_level_keys", ())),
        runtime_keys=frozenset(raw.get("runtime_keys", ())),
        runtime_keys_for_fields=frozenset(raw.get("runtime_keys_for_fields", ())),
        builtin_server_installs={
            k: (v["file"], v["text"]) for k, v in raw.get("builtin_server_installs", {}).items()
        },
        server_models={
            server: {entry: _server_model(model) for entry, model in entries.items()}
            for server, entries in raw.get("server_models", {}).items()
        },
    )


def builtin_config(path: str) -> dict[str, Any] | None:
    """What the nemo-gym wheel's YAML file ``path`` holds (a new dict each call); None for a
    path the wheel does not ship. Only that config is parsed: the file
    (``scripts/gen_gym_configs.py``) has one per line, and a run needs a handful.
    """
    text = _builtin_config_texts().get(path)
    return None if text is None else json.loads(text)


def is_builtin_config(path: str) -> bool:
    """``path`` is a YAML file of the nemo-gym wheel (``builtin_config`` knows it)."""
    return path in _builtin_config_texts()


@cache
def _builtin_config_texts() -> dict[str, str]:
    """Each built-in config's JSON text, by path, from the file's lines (any other layout of
    the same JSON is parsed whole)."""
    text = (_DATA / "gym_configs.json").read_text("utf-8")
    lines = text.split("\n")
    found: dict[str, str] = {}
    if lines[0] == '{"configs": {':
        for line in lines[1:]:
            if line in ("},", "}"):
                return found
            key_end = line.find('": ')
            if not line.startswith('"') or key_end < 0 or "\\" in line[:key_end]:
                break
            found[line[1:key_end]] = line[key_end + 3:].removesuffix(",")
    configs = json.loads(text)["configs"]
    return {path: json.dumps(config) for path, config in configs.items()}


def runtime_requirements(gym_version: str) -> list[str]:
    """What Gym adds to every server venv: ``nemo-gym==V``, ``ray[default]``, ``openai`` at
    nemo-gym's own Requires-Dist, and the ``pip`` its ``uv venv --seed`` installs: the same
    roots ``validate --offline`` walks."""
    from envkit.model.closure import runtime_roots  # the closure model is not needed at start

    roots = runtime_roots(gym_version, gym_data().requires_dist, "")
    return [str(root.requirement) for root in roots]
