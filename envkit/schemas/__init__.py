"""JSON Schemas shipped with envkit: its inputs, and every JSON shape a command prints."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, cast

__all__ = ["SCHEMAS", "load_schema", "schema_text"]

SCHEMAS = ("manifest", "diagnostics", "job", "convert", "rollout", "train", "train-config",
           "rules", "settings", "error", "submit", "job-output", "smoke", "probe", "init",
           "provenance", "prefetch", "rescore", "profile")
"""The inputs envkit reads (manifest, job) and the JSON every command can print."""


_HERE = Path(__file__).parent
"""The schemas sit beside this module (a plain path: ``importlib.resources`` would cost every
``envkit`` start the imports of ``tempfile``, ``shutil`` and ``random`` for a file next door)."""


def schema_text(name: str) -> str:
    return (_HERE / f"{name}.schema.json").read_text("utf-8")


@cache
def load_schema(name: str) -> dict[str, Any]:
    return cast("dict[str, Any]", json.loads(schema_text(name)))
