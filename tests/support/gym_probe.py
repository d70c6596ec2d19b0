"""Load packages' Gym configs with the REAL nemo-gym config machinery; never starts a server.

Run with the interpreter of a venv that has nemo-gym installed (``envkit.gym.venv``). Reads a
JSON list of ``{"id", "root", "config_paths"}`` on stdin and writes one JSON list to stdout.

For each package it does what ``gym env start`` does up to the point where processes spawn:
``GlobalConfigDictParser().parse()`` with the manifest's ``config_paths`` and cwd = the package
root (the job injects ``policy_base_url`` / ``policy_api_key`` / ``policy_model_name`` the way
NeMo-RL's initial global config does), ``raise_on_no_server_instances``, then, per server, the
directory ``RunHelper._start`` would run (``_resolve_server_dir``) and whether its
``entrypoint`` exists there. ``offline=True`` is Gym's own static-inspection mode: no port
probing, no exporters, no environment mutation.

For a server Gym runs from its built-ins, it also does what that server does first when it
starts: ``<ServerClass>.load_config_from_global_config()``, which validates the block with the
implementation's pydantic config model. The entrypoint is imported (not run as ``__main__``)
to get the class its ``<ServerClass>.run_webserver()`` names; an entrypoint that needs packages
this venv lacks is reported as ``unknown``.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import logging
import os
import runpy
import sys
import warnings
from pathlib import Path

POLICY = {
    "policy_base_url": "http://127.0.0.1:1/v1",
    "policy_api_key": "probe",
    "policy_model_name": "probe-model",
}


_CLASSES: dict[Path, object] = {}


def _runner_class(entrypoint: Path) -> object:
    """The class ``entrypoint`` starts (``X.run_webserver()``), imported as Gym's cwd would."""
    if entrypoint in _CLASSES:
        return _CLASSES[entrypoint]
    names = {
        node.func.value.id for node in ast.walk(ast.parse(entrypoint.read_text("utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run_webserver" and isinstance(node.func.value, ast.Name)
    }
    found: object = None
    if len(names) == 1:
        before = set(sys.modules)
        sys.path.insert(0, str(entrypoint.parent))
        quiet = contextlib.redirect_stdout(io.StringIO())
        try:
            with quiet, contextlib.redirect_stderr(io.StringIO()):
                found = runpy.run_path(str(entrypoint), run_name="gym_probe")[names.pop()]
        except Exception:  # an extra dependency this venv lacks: unknown
            found = None
        finally:
            sys.path.remove(str(entrypoint.parent))
            for name in set(sys.modules) - before:
                if str(getattr(sys.modules[name], "__file__", "") or "").startswith(
                    str(entrypoint.parent)
                ):
                    del sys.modules[name]
    _CLASSES[entrypoint] = found
    return found


def _model_check(config, name: str, entrypoint: Path) -> dict:
    """Gym's own start-up validation of one server's block (``load_config_from_global_config``)."""
    import pydantic
    from nemo_gym import global_config
    from nemo_gym.global_config import NEMO_GYM_CONFIG_PATH_ENV_VAR_NAME

    server_class = _runner_class(entrypoint) if entrypoint.is_file() else None
    if server_class is None:
        return {"status": "unknown", "errors": []}
    global_config._GLOBAL_CONFIG_DICT = config  # what the child reads from NEMO_GYM_CONFIG_DICT
    os.environ[NEMO_GYM_CONFIG_PATH_ENV_VAR_NAME] = name
    try:
        server_class.load_config_from_global_config()
    except pydantic.ValidationError as exc:
        errors = [{"loc": [str(p) for p in e["loc"]], "type": e["type"], "msg": e["msg"]}
                  for e in exc.errors()]
        return {"status": "invalid", "errors": errors}
    except Exception as exc:
        return {"status": "error", "errors": [{"loc": [], "type": type(exc).__name__,
                                                "msg": str(exc)[:300]}]}
    finally:
        global_config._GLOBAL_CONFIG_DICT = None
        os.environ.pop(NEMO_GYM_CONFIG_PATH_ENV_VAR_NAME, None)
    return {"status": "ok", "errors": []}


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
        entrypoint = resolved / str(fields["entrypoint"])
        model = (_model_check(config, name, entrypoint) if where == "builtin"
                 else {"status": "not-builtin", "errors": []})
        out.append({
            "name": name,
            "model": model,
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
    sys.dont_write_bytecode = True  # importing Gym's entrypoints must not write into its venv
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
