"""A small JSON file a package carries (``wheels.lock``, ``provenance.json``), read leniently:
bounded in size, never raising over its bytes, saying in one phrase what is wrong.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from envkit.model._reads import read_bounded

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["JsonObject", "parse_object", "read_object"]


class JsonObject(NamedTuple):
    """The top-level object, or ``error`` (a phrase: "not JSON: ...")."""

    data: dict[str, Any] | None = None
    error: str | None = None


def read_object(path: Path, limit: int) -> JsonObject:
    """Read ``path`` (a regular file the package walk found), at most ``limit`` bytes."""
    try:
        raw = read_bounded(path, limit)
    except OSError as exc:
        return JsonObject(error=f"cannot be read: {exc.strerror or exc}")
    return parse_object(raw, limit)


def parse_object(raw: bytes, limit: int) -> JsonObject:
    """The JSON object in ``raw``; over ``limit`` bytes is not parsed.

    >>> parse_object(b'{"a": 1}', 100)
    JsonObject(data={'a': 1}, error=None)
    >>> parse_object(b'[1]', 100).error
    'top level is a list, not an object'
    """
    if len(raw) > limit:
        return JsonObject(error=f"over {limit // 2**20} MiB; not parsed")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:
        return JsonObject(error=f"not JSON: {exc}")
    if not isinstance(data, dict):
        return JsonObject(error=f"top level is a {type(data).__name__}, not an object")
    return JsonObject(data=data)
