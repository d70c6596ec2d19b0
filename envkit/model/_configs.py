"""Read the Gym configs a package names, each once, and the includes each one lists.

Gym loads every manifest ``config_paths`` file and, transitively, the files each one lists in
its own ``config_paths`` (relative to the package root). Configs that all list each other are a
real shape (N files, N x N include pairs), so every file is parsed once, every distinct include
normalised once, and the includes are kept per config (``Package.includes``) for the checks.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from envkit.model._paths import safe_relpath
from envkit.model._reads import read_bounded
from envkit.model.yamlio import MAX_YAML_BYTES, YamlDoc, parse_yaml

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from envkit.model._walk import Errors, FileEntry

__all__ = ["MAX_CONFIGS", "MAX_CONFIG_BYTES", "ConfigSet", "read_bytes", "read_configs",
           "read_yaml"]

MAX_CONFIGS = 2_000
"""Configs parsed per package (Gym packages ship a handful)."""
MAX_CONFIG_BYTES = 64 * 1024 * 1024
"""YAML parsed per package, all configs together: bounds the time one validate run takes."""


@dataclass(frozen=True, slots=True)
class ConfigSet:
    """A package's Gym configs as read: each parsed document by path, and what each includes."""

    docs: dict[str, YamlDoc] = field(default_factory=dict)
    includes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per parsed config: its ``config_paths`` entries normalised (``safe_relpath``), without
    repeats, in order; entries that are absolute or use ``..`` are left out."""


def read_bytes(root: Path, rel: str, errors: Errors, limit: int | None = None) -> bytes | None:
    """``read_bounded`` of ``rel``; an error is recorded in ``errors``, not raised."""
    try:
        return read_bounded(f"{os.fspath(root)}/{rel}", limit)  # no Path built per config
    except OSError as exc:
        errors.append((rel, exc.strerror or str(exc)))
        return None


def read_yaml(root: Path, rel: str, errors: Errors) -> YamlDoc:
    raw = read_bytes(root, rel, errors, limit=MAX_YAML_BYTES)
    if raw is None:
        return YamlDoc(rel, error="cannot be read")
    if len(raw) > MAX_YAML_BYTES:
        msg = f"file is over {MAX_YAML_BYTES // 2**20} MiB; YAML that large is not parsed"
        return YamlDoc(rel, error=msg)
    return parse_yaml(rel, raw)


def _listed(doc: YamlDoc) -> list[object]:
    """``config_paths`` inside a Gym config, as written."""
    data = doc.data if doc.ok else None
    paths = data.get("config_paths") if isinstance(data, Mapping) else None
    return paths if isinstance(paths, list) else []


class _Normaliser:
    """``safe_relpath`` once per distinct string (N configs listing the same N paths)."""

    def __init__(self) -> None:
        self._seen: dict[str, str | None] = {}

    def all(self, values: Sequence[object]) -> tuple[str, ...]:
        seen = self._seen
        try:  # every entry seen before (the fan-out's common case): one pass in C
            known = list(map(seen.__getitem__, cast("Sequence[str]", values)))
        except (KeyError, TypeError):  # new strings, or not strings (keys are str, unhashable)
            pass
        else:
            return tuple(dict.fromkeys(filter(None, known)))  # safe_relpath never gives ""
        out: dict[str, None] = {}
        for value in values:
            if isinstance(value, str):
                rel = seen[value] if value in seen else seen.setdefault(value, safe_relpath(value))
                if rel is not None:
                    out[rel] = None
        return tuple(out)


def read_configs(root: Path, entries: Mapping[str, FileEntry], manifest_paths: list[str],
                 errors: Errors) -> ConfigSet:
    """Manifest ``config_paths`` first, then the in-package files they pull in, transitively;
    each distinct path is queued once, and the count and bytes parsed are capped."""
    found = ConfigSet()
    normalise = _Normaliser()
    pending = deque(normalise.all(manifest_paths))
    queued = set(pending)
    budget = MAX_CONFIG_BYTES
    while pending:
        rel = pending.popleft()
        entry = entries.get(rel)
        if entry is None or entry.kind != "file":
            continue  # missing / symlink / dir: EK106/EK107 report it, nothing to parse
        if len(found.docs) >= MAX_CONFIGS or entry.size > budget:
            errors.append((rel, f"not parsed: over {MAX_CONFIGS:,} configs or "
                                f"{MAX_CONFIG_BYTES // 2**20} MiB of YAML in one package"))
            break
        budget -= entry.size
        doc = found.docs[rel] = read_yaml(root, rel, errors)
        includes = found.includes[rel] = normalise.all(_listed(doc))
        fresh = [p for p in includes if p not in queued]
        queued.update(fresh)
        pending.extend(fresh)
    return found
