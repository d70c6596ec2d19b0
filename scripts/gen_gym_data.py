"""Regenerate ``envkit/data/gym.json`` from an installed ``nemo-gym`` wheel.

Run it with the interpreter of a venv that has nemo-gym installed (Gym needs CPython 3.13):

    uv venv --python 3.13 /tmp/gym && uv pip install --python /tmp/gym/bin/python \
        --python-version 3.13.14 nemo-gym==0.7.0
    /tmp/gym/bin/python scripts/gen_gym_data.py > envkit/data/gym.json

Nothing here is typed by hand: built-in server names are the directories the wheel installs,
and the closed sets (domains, dataset types, licenses) are read off Gym's pydantic models.
``server_models`` (EK318) comes from importing each built-in entrypoint and asking its config
model what it requires (``scripts/gym_server_models.py``); this takes about a minute.
``builtin_server_installs`` keeps each built-in server's install marker, trimmed, so that
``validate --offline`` can walk the venv Gym builds for a built-in the package does not ship.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import typing
from importlib import metadata
from pathlib import Path

from gym_server_models import server_models

SERVER_TYPES = (
    "resources_servers", "responses_api_agents", "responses_api_models", "environment_servers",
)


def _literals(annotation: object) -> list[str]:
    """Flatten Optional[Union[Literal[...], ...]] into its literal strings."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return [a for a in args if isinstance(a, str)]
    return [value for arg in args for value in _literals(arg)]


_POLICY = {"policy_base_url": "http://x/v1", "policy_api_key": "k", "policy_model_name": "m"}


def _parse(config: dict) -> object:
    """Gym's own static parse (no ports, no exporters), stderr silenced."""
    from nemo_gym.global_config import (
        GlobalConfigDictParser,
        GlobalConfigDictParserConfig,
    )
    from omegaconf import DictConfig

    cfg = GlobalConfigDictParserConfig(
        initial_global_config_dict=DictConfig({**_POLICY, **config}),
        skip_load_from_cli=True, skip_load_from_dotenv=True, offline=True,
    )
    with contextlib.redirect_stderr(io.StringIO()):
        return GlobalConfigDictParser().parse(cfg)


def _runtime_keys() -> tuple[list[str], list[str]]:
    """Top-level keys Gym's parse adds itself, and those a server's own field may interpolate.

    A server's direct fields are resolved during parse, before Gym has filled in most of its
    keys (``head_server`` ...); nested values are resolved only in the running server, where the
    whole global config exists. Both lists come from running the parser, not from reading it.
    """
    server = {"responses_api_models": {"vllm_model": {"entrypoint": "app.py"}}}
    with tempfile.TemporaryDirectory() as tmp:
        old = Path.cwd()
        os.chdir(tmp)
        try:
            added = sorted(set(_parse({"policy_model": server})) - set(_POLICY) - {"policy_model"})
            early = []
            for key in added:
                inner = {**server["responses_api_models"]["vllm_model"], "probe": "${" + key + "}"}
                with contextlib.suppress(Exception):
                    _parse({"policy_model": {"responses_api_models": {"vllm_model": inner}}})
                    early.append(key)
        finally:
            os.chdir(old)
    return added, early


def server_installs(site: Path, server_dirs: list[str]) -> dict[str, dict[str, str]]:
    """Per built-in server dir, the install marker Gym builds its venv from, trimmed to what
    the offline closure check reads: requirement lines, or a pyproject's dependencies and
    build requirements (an editable ``uv pip install -e .`` builds it, so those are needed)."""
    import tomllib

    out: dict[str, dict[str, str]] = {}
    for rel in server_dirs:
        req, proj = site / rel / "requirements.txt", site / rel / "pyproject.toml"
        if req.is_file():
            lines = [ln.strip() for ln in req.read_text().splitlines()]
            text = "".join(f"{ln}\n" for ln in lines if ln and not ln.startswith("#"))
            out[rel] = {"file": "requirements.txt", "text": text}
        elif proj.is_file():
            data = tomllib.loads(proj.read_text())
            deps = data.get("project", {}).get("dependencies", [])
            build = data.get("build-system", {}).get("requires", [])
            text = (f"[project]\ndependencies = {json.dumps(deps)}\n"
                    f"[build-system]\nrequires = {json.dumps(build)}\n")
            out[rel] = {"file": "pyproject.toml", "text": text}
    return out


def main() -> None:
    sys.dont_write_bytecode = True  # importing built-in entrypoints must not touch the venv
    from nemo_gym import config_types
    from nemo_gym.global_config import NEMO_GYM_RESERVED_TOP_LEVEL_KEYS

    dist = metadata.distribution("nemo-gym")
    site = Path(dist.locate_file(""))
    builtins = {
        server_type: sorted(
            p.name for p in (site / server_type).iterdir()
            # build leftovers (``*.egg-info``) are not servers: only importable names are
            if p.is_dir() and p.name.isidentifier() and not p.name.startswith("_")
        )
        for server_type in SERVER_TYPES
    }
    markers = ("requirements.txt", "pyproject.toml")
    server_dirs = sorted(
        str(p.parent.relative_to(site))
        for server_type in SERVER_TYPES
        for marker in markers
        for p in (site / server_type).rglob(marker)
        if "tests" not in p.parts and "data" not in p.parts
    )
    fields = config_types.DatasetConfig.model_fields
    runtime_keys, field_keys = _runtime_keys()
    data = {
        "nemo_gym_version": dist.version,
        "requires_python": dist.metadata["Requires-Python"],
        "requires_dist": [r for r in dist.requires or [] if "extra ==" not in r],
        "domains": [d.value for d in config_types.Domain],
        "dataset_types": _literals(fields["type"].annotation),
        "dataset_licenses": _literals(fields["license"].annotation),
        "benchmark_dataset_types": _literals(
            config_types.BenchmarkDatasetConfig.model_fields["type"].annotation
        ),
        "reserved_top_level_keys": list(NEMO_GYM_RESERVED_TOP_LEVEL_KEYS),
        "runtime_keys": runtime_keys,
        "runtime_keys_for_fields": field_keys,
        "builtins": builtins,
        "builtin_server_dirs": sorted(set(server_dirs)),
        "builtin_server_installs": server_installs(site, sorted(set(server_dirs))),
        # Last: per built-in server entrypoint, its config model's required fields and types.
        "server_models": server_models(site, sorted(set(server_dirs))),
    }
    json.dump(data, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
