"""Load packages' Gym configs with the REAL nemo-gym config machinery; never starts a server.

Run with the interpreter of a venv that has nemo-gym installed (``envkit.gymvenv``). Reads a
JSON list of ``{"id", "root", "config_paths"}`` on stdin and writes one JSON list to stdout.

For each package it does what ``gym env start`` does up to the point where processes spawn:
``GlobalConfigDictParser().parse()`` with the manifest's ``config_paths`` and cwd = the package
root (the job injects ``policy_base_url`` / ``policy_api_key`` / ``policy_model_name`` the way
NeMo-RL's initial global config does), ``raise_on_no_server_instances``, then, per server, the
directory ``RunHelper._start`` would run (``_resolve_server_dir``) and whether its
``entrypoint`` exists there. ``offline=True`` is Gym's own static-inspection mode: no port
probing, no exporters, no environment mutation.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import warnings
from pathlib import Path

POLICY = {
    "policy_base_url": "http://127.0.0.1:1/v1",
    "policy_api_key": "probe",
    "policy_model_name": "probe-model",
}


def _servers(config) -> list[dict]:
    from nemo_gym import PARENT_DIR
    from nemo_gym.cli.env import _resolve_server_dir
    from nemo_gym.global_config import NEMO_GYM_RESERVED_TOP_LEVEL_KEYS
    from omegaconf import DictConfig

    out = []
    # The same three-level walk as nemo_gym.cli.env.RunHelper._start.
    for name in [k for k in config if k not in NEMO_GYM_RESERVED_TOP_LEVEL_KEYS]:
        block = config[name]
        if not isinstance(block, DictConfig):
            continue
        server_type = list(block)[0]  # noqa: RUF015 - IndexError when empty, as in Gym
        inner = block[server_type]
        if not isinstance(inner, DictConfig):
            continue
        impl = list(inner)[0]  # noqa: RUF015 - same as Gym
        fields = inner[impl]
        if not isinstance(fields, DictConfig) or "entrypoint" not in fields:
            continue
        local = Path.cwd() / server_type / impl
        resolved = _resolve_server_dir(Path(server_type, impl))
        markers = ("requirements.txt", "pyproject.toml")
        where = "missing"
        if any((resolved / m).exists() for m in markers):
            builtin = resolved.resolve().is_relative_to(PARENT_DIR.resolve())
            where = "builtin" if builtin else "package"
        out.append({
            "name": name,
            "type": server_type,
            "impl": impl,
            "dir": where,
            "shadowed": where == "builtin" and local.is_dir(),
            "entrypoint_exists": (resolved / str(fields["entrypoint"])).is_file(),
        })
    return out


def probe(root: str, config_paths: list[str]) -> dict:
    from nemo_gym.global_config import (
        GlobalConfigDictParser,
        GlobalConfigDictParserConfig,
        translate_interpolation_error,
    )
    from omegaconf import DictConfig
    from omegaconf.errors import InterpolationResolutionError

    os.chdir(root)
    initial = DictConfig({**POLICY, "config_paths": config_paths})
    parser = GlobalConfigDictParser()
    log = io.StringIO()
    try:
        with contextlib.redirect_stderr(log), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                config = parser.parse(GlobalConfigDictParserConfig(
                    initial_global_config_dict=initial,
                    skip_load_from_cli=True,
                    skip_load_from_dotenv=True,
                    offline=True,
                ))
            except InterpolationResolutionError as exc:
                raise translate_interpolation_error(exc) from exc
            parser.raise_on_no_server_instances(config)
            servers = _servers(config)
    except Exception as exc:
        return {"ok": False, "error_type": type(exc).__name__, "error": str(exc)[:2000],
                "log": log.getvalue()[-2000:], "servers": []}
    return {"ok": True, "error_type": None, "error": None, "log": log.getvalue()[-2000:],
            "servers": servers}


def main() -> None:
    logging.disable(logging.CRITICAL)
    requests = json.load(sys.stdin)
    start = Path.cwd()
    results = []
    for req in requests:
        results.append({"id": req["id"], **probe(req["root"], req["config_paths"])})
        os.chdir(start)
    json.dump(results, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
