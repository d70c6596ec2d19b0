"""Regenerate ``envkit/data/gym_configs.json``: what each YAML config in the nemo-gym wheel defines.

Run it with the interpreter of a venv that has nemo-gym installed (see ``gen_gym_data.py``):

    /tmp/gym/bin/python scripts/gen_gym_configs.py > envkit/data/gym_configs.json

A package config may pull in a config it does not ship (``config_paths:`` inside a config);
Gym then loads the file from its install root. envkit never reads the Gym install at validate
time, so this summary records, per built-in config file, the configs it includes, its other
top-level keys, and for each server block (or override of one): type, implementation,
``entrypoint``, ``domain`` and the refs in its direct fields (what Gym checks at spin-up).
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

SERVER_TYPES = ("resources_servers", "responses_api_agents", "responses_api_models",
                "environment_servers")


def _refs(fields: dict) -> dict[str, dict]:
    """Direct fields that are refs, or overrides of one (just `name:` over an included ref)."""
    return {
        key: {k: value[k] for k in ("type", "name") if isinstance(value.get(k), str)}
        for key, value in fields.items()
        if isinstance(value, dict) and (isinstance(value.get("name"), str)
                                        or value.get("type") in SERVER_TYPES)
    }


def _server(body: object) -> dict | None:
    """Type, implementation and the fields envkit checks, for a server block or an override of
    one (a later config may set just `resources_server.name` on an included agent)."""
    if not isinstance(body, dict):
        return None
    types = [k for k in body if k in SERVER_TYPES]
    inner = body[types[0]] if len(types) == 1 else None
    if not isinstance(inner, dict) or len(inner) != 1:
        return None
    impl, fields = next(iter(inner.items()))
    if not isinstance(fields, dict):
        return None
    keep = {k: fields[k] for k in ("entrypoint", "domain") if k in fields}
    return {"type": types[0], "impl": impl, "fields": {**keep, **_refs(fields)}}


def summarize(data: object) -> dict:
    data = data if isinstance(data, dict) else {}
    includes = data.get("config_paths") or []
    servers, keys = {}, []
    for key, body in data.items():
        if key == "config_paths":
            continue
        server = _server(body)
        if server is not None:
            servers[str(key)] = server
        else:
            keys.append(str(key))
    return {"includes": [p for p in includes if isinstance(p, str)], "servers": servers,
            "keys": keys}


def main() -> None:
    dist = metadata.distribution("nemo-gym")
    out = {}
    for file in sorted(dist.files or [], key=str):
        if file.suffix not in (".yaml", ".yml") or str(file).startswith(("nemo_gym/", "..")):
            continue
        try:
            data = yaml.safe_load(Path(file.locate()).read_text("utf-8"))
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            continue
        out[str(file)] = summarize(data)
    sys.stdout.write(layout(out, dist.version))


def layout(configs: dict[str, Any], version: str) -> str:
    """The file, one config per line: JSON as a whole, and ``envkit.model.gym_data`` parses
    only the lines of the configs a package pulls in (a validate run needs a handful of the
    ~900; parsing them all cost each process 3.5 ms)."""
    rows = ",\n".join(f"{json.dumps(path)}: {json.dumps(configs[path], sort_keys=True)}"
                      for path in sorted(configs))
    return f'{{"configs": {{\n{rows}\n}},\n"nemo_gym_version": {json.dumps(version)}}}\n'


if __name__ == "__main__":
    main()
