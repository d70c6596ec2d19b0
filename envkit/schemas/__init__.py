"""JSON Schemas shipped with envkit: its inputs, and every JSON shape a command prints."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["SCHEMAS", "load_schema", "schema_text"]

SCHEMAS = ("manifest", "diagnostics", "job", "convert", "rollout", "train", "train-config",
           "rules", "settings", "error", "submit", "job-output", "smoke", "probe", "init",
           "provenance")
"""The inputs envkit reads (manifest, job) and the JSON every command can print."""


def schema_text(name: str) -> str:
    return resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8")


@cache
def load_schema(name: str) -> dict[str, Any]:
    return json.loads(schema_text(name))
