"""The package model: read a package directory once, so no validator touches the disk.

``load_package`` is lenient (like ``packaging.metadata.parse_email``): it records what it
could not read instead of raising, and the validators turn those records into diagnostics.
Nothing in the package is imported or executed, and symlinks are never followed while
walking, so loops and links out of the tree cannot hang or escape the reader.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.model._configs import read_bytes, read_configs, read_yaml
from envkit.model._paths import LOCK_NAME, PROVENANCE_NAME, display_path, safe_relpath
from envkit.model._walk import MAX_ENTRIES, Errors, FileEntry, walk
from envkit.model.reqfiles import include_target
from envkit.model.secrets import Secret, find_secrets
from envkit.model.yamlio import YamlDoc

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from envkit.model.lock import LockDoc
    from envkit.model.provenance import ProvenanceDoc
    from envkit.model.tree import FileStat, Tree
    from envkit.model.wheelfile import WheelFile, WheelReader

    TreeHasher = Callable[[Path, Mapping[str, FileStat | None], Mapping[str, str]], Tree]
    """``(root, regular files with the walk's stat, SHA-256 of those read whole) -> Tree``."""

__all__ = [
    "INSTALL_MARKERS",
    "LOCK_NAME",
    "MANIFEST",
    "MAX_ENTRIES",
    "PROVENANCE_NAME",
    "SERVER_TYPES",
    "WHEEL_FORMATS",
    "FileEntry",
    "Package",
    "ServerDir",
    "display_path",
    "load_package",
    "safe_relpath",
    "server_block",
]

INSTALL_MARKERS = ("requirements.txt", "pyproject.toml")
"""Files Gym builds a server venv from (exactly one per server dir)."""

MANIFEST = "nemo-environment.yaml"
"""The file that makes a directory a package (the one home of its name)."""
WHEEL_FORMATS = ("wheels-v1", "adapter-wheels-v1")
"""The formats that ship a ``wheels/`` directory (native-v1 installs from an index)."""
SERVER_TYPES = (
    "resources_servers",
    "responses_api_agents",
    "responses_api_models",
    "environment_servers",
)

_MAX_TEXT_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerDir:
    """``<server_type>/<impl>/`` as the package ships it."""

    server_type: str
    name: str
    files: frozenset[str]
    """Names of the regular files directly inside the directory."""
    texts: Mapping[str, str] = field(default_factory=dict)
    """Contents of ``requirements.txt`` / ``pyproject.toml`` when present and readable."""

    @property
    def path(self) -> str:
        return f"{self.server_type}/{self.name}"


@dataclass(frozen=True, slots=True)
class Package:
    """Everything the validators may look at, read once."""

    root: Path
    entries: Mapping[str, FileEntry]
    manifest: YamlDoc | None
    """None when ``nemo-environment.yaml`` is absent."""
    configs: Mapping[str, YamlDoc]
    """Parsed files named by ``config_paths`` that are safe to read (inside, regular), then the
    in-package files their own ``config_paths`` pull in (Gym loads those too)."""
    servers: tuple[ServerDir, ...]
    wheels: tuple[WheelFile, ...]
    includes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per parsed config: its own ``config_paths``, normalised and without repeats (read once,
    so the checks never re-walk a fan-out of include pairs)."""
    lock: LockDoc | None = None
    """``wheels.lock`` as read; None when the package has none."""
    provenance: ProvenanceDoc | None = None
    """``provenance.json`` as read, with the files hashed now; None when there is none."""
    read_errors: tuple[tuple[str, str], ...] = ()
    """``(path, reason)`` for entries that could not be read."""
    nested_manifest: str | None = None
    """Path of a manifest one directory down when the root has none (wrong upload root)."""
    truncated: bool = False
    secrets: tuple[Secret, ...] = ()
    """Dotenv and key files, private keys and API tokens found in the package's files
    (``envkit.model.secrets``): what must never be uploaded."""

    @property
    def manifest_data(self) -> Mapping[str, Any]:
        """The manifest mapping, or an empty one when it is missing or malformed."""
        data = self.manifest.data if self.manifest else None
        return data if isinstance(data, dict) else {}

    @property
    def format(self) -> str | None:
        value = self.manifest_data.get("format")
        return value if isinstance(value, str) else None

    @property
    def name(self) -> str | None:
        meta = self.manifest_data.get("metadata")
        value = meta.get("name") if isinstance(meta, dict) else None
        return value if isinstance(value, str) else None

    def config_paths(self) -> list[str]:
        """The manifest's ``config_paths`` strings, in order (non-strings dropped)."""
        paths = self.manifest_data.get("config_paths")
        return [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []

    def files_under(self, prefix: str) -> Iterator[FileEntry]:
        base = prefix.rstrip("/") + "/"
        return (e for p, e in self.entries.items() if p.startswith(base))


def load_package(root: str | os.PathLike[str], *, verify_hashes: bool = False,
                 wheel_reader: WheelReader | None = None,
                 tree_hasher: TreeHasher | None = None) -> Package:
    """Read the package at ``root``.

    ``verify_hashes`` checks every wheel member's RECORD hash (``envkit.model.wheelfile``).
    ``wheel_reader`` (default ``read_wheel``) and ``tree_hasher`` (default ``package_tree``,
    for the digest a provenance record is checked against): validate passes ones that keep
    the facts of unchanged wheels and files between runs.

    :raises FileNotFoundError, NotADirectoryError: ``root`` is not a directory (a usage
        error, not a package defect).
    """
    root_path = Path(root)
    if not root_path.exists():
        msg = f"{str(root_path)!r} does not exist"
        raise FileNotFoundError(msg)
    if not root_path.is_dir():
        msg = f"{str(root_path)!r} is not a directory"
        raise NotADirectoryError(msg)
    entries, errors, truncated = walk(root_path)
    manifest = _read_manifest(root_path, entries, errors)
    # The secret scan reads every text file whole; with a provenance record to check, it also
    # hashes what it read, and the package digest reads only the rest.
    read: dict[str, str] | None = {} if PROVENANCE_NAME in entries else None
    secrets = find_secrets(root_path, (p for p, e in entries.items() if e.kind == "file"), read)
    pkg = Package(
        root=root_path,
        entries=entries,
        manifest=manifest,
        configs={},
        servers=_read_servers(root_path, entries, errors),
        wheels=_read_wheels(root_path, entries, verify_hashes, wheel_reader),
        nested_manifest=None if manifest else _find_nested_manifest(entries),
        truncated=truncated,
        lock=_read_lock(root_path, entries),
        provenance=_read_provenance(root_path, entries, tree_hasher, read or {}),
        secrets=secrets,
    )
    configs = read_configs(root_path, entries, pkg.config_paths(), errors)
    return replace(pkg, configs=configs.docs, includes=configs.includes,
                   read_errors=tuple(errors))


def _read_lock(root: Path, entries: Mapping[str, FileEntry]) -> LockDoc | None:
    entry = entries.get(LOCK_NAME)
    if entry is None:
        return None
    from envkit.model.lock import LockDoc, read_lock  # only a package with a lock needs it

    if entry.kind != "file":
        return LockDoc(error=f"is {_kind(entry)}, not a regular file; not read")
    return read_lock(root / LOCK_NAME)


def _read_provenance(root: Path, entries: Mapping[str, FileEntry],
                     tree_hasher: TreeHasher | None,
                     read: Mapping[str, str]) -> ProvenanceDoc | None:
    """The record, and the package digest now: only when there is a record (a package
    without one is never hashed here)."""
    entry = entries.get(PROVENANCE_NAME)
    if entry is None:
        return None
    from envkit.model.provenance import (  # only a package with a record needs them
        ProvenanceDoc,
        package_tree,
        read_provenance,
    )

    if entry.kind != "file":
        return ProvenanceDoc(error=f"is {_kind(entry)}, not a regular file; not read")
    doc = read_provenance(root / PROVENANCE_NAME)
    files = {p: e.stat for p, e in entries.items() if e.kind == "file"}
    try:
        actual = (tree_hasher(root, files, read) if tree_hasher
                  else package_tree(root, files, seen=files, read=read))
    except OSError:  # the unreadable file is reported by EK207
        actual = None
    return replace(doc, actual=actual)


def _kind(entry: FileEntry) -> str:
    return {"dir": "a directory", "symlink": "a symlink"}.get(entry.kind, "a special file")


def _read_manifest(root: Path, entries: Mapping[str, FileEntry], errors: Errors) -> YamlDoc | None:
    entry = entries.get(MANIFEST)
    if entry is None:
        return None
    if entry.kind != "file":
        return YamlDoc(MANIFEST, error=f"is {_kind(entry)}, not a regular file")
    return read_yaml(root, MANIFEST, errors)


def _read_wheels(root: Path, entries: Mapping[str, FileEntry], deep: bool,
                 reader: WheelReader | None) -> tuple[WheelFile, ...]:
    """Each ``wheels/*.whl`` file read, in path order."""
    files = [e for p, e in sorted(entries.items()) if e.kind == "file"
             and p.startswith("wheels/") and p.endswith(".whl") and p.count("/") == 1]
    if not files:
        return ()
    if reader is None:
        from envkit.model.wheelfile import read_wheel

        reader = read_wheel
    return tuple(reader(root / e.path, deep=deep) for e in files)


def _find_nested_manifest(entries: Mapping[str, FileEntry]) -> str | None:
    return min((p for p in entries if p.count("/") == 1 and p.endswith("/" + MANIFEST)),
               default=None)


def _read_servers(
    root: Path, entries: Mapping[str, FileEntry], errors: Errors
) -> tuple[ServerDir, ...]:
    """``<server_type>/<impl>/`` dirs and their direct files, in one pass over the entries."""
    dirs: dict[tuple[str, str], set[str]] = {}
    for path, entry in entries.items():
        parts = path.split("/", 3)
        if parts[0] not in SERVER_TYPES:
            continue
        if len(parts) == 2 and entry.kind == "dir":  # type/impl
            dirs.setdefault((parts[0], parts[1]), set())
        elif len(parts) == 3 and entry.kind == "file":  # type/impl/file: the walk entered impl
            dirs.setdefault((parts[0], parts[1]), set()).add(parts[2])
    order = {t: i for i, t in enumerate(SERVER_TYPES)}
    servers = []
    for (server_type, impl), names in sorted(dirs.items(), key=lambda kv: (order[kv[0][0]], kv[0])):
        texts = _marker_texts(root, f"{server_type}/{impl}/", names, entries, errors)
        servers.append(ServerDir(server_type, impl, frozenset(names), texts))
    return tuple(servers)


def _marker_texts(
    root: Path, prefix: str, names: set[str], entries: Mapping[str, FileEntry], errors: Errors
) -> dict[str, str]:
    texts: dict[str, str] = {}
    for name in INSTALL_MARKERS:
        entry = entries.get(prefix + name)
        if name in names and entry is not None and entry.size <= _MAX_TEXT_BYTES:
            raw = read_bytes(root, prefix + name, errors)
            if raw is not None:
                texts[name] = raw.decode("utf-8", errors="replace")
    if "requirements.txt" in texts:
        _read_includes(root, prefix, texts, entries, errors)
    return texts


_MAX_INCLUDES = 32


def _read_includes(root: Path, prefix: str, texts: dict[str, str],
                   entries: Mapping[str, FileEntry], errors: Errors) -> None:
    """Files ``requirements.txt`` pulls in with ``-r``/``-c``, transitively, as pip and uv
    resolve them, keyed by path relative to the server directory. Only regular files inside
    the package are read; at most ``_MAX_INCLUDES``."""
    pending = ["requirements.txt"]
    while pending and len(texts) < _MAX_INCLUDES:
        rel = pending.pop()
        for line in texts[rel].splitlines():
            if (target := include_target(line.strip())) is None:
                continue
            key = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target[1]))
            full = posixpath.normpath(prefix + key)
            entry = entries.get(full)
            if key in texts or full.startswith("../") or entry is None or entry.kind != "file":
                continue
            raw = read_bytes(root, full, errors, limit=_MAX_TEXT_BYTES)
            if raw is not None and len(raw) <= _MAX_TEXT_BYTES:
                texts[key] = raw.decode("utf-8", errors="replace")
                pending.append(key)


def server_block(block: object) -> tuple[str, str, Mapping[str, Any]] | None:
    """``(type, impl, body)`` of a config's top-level block shaped as Gym reads a server
    (``{type: {impl: {...}}}``, one key at each level); None for anything else (a setting)."""
    if not isinstance(block, dict) or len(block) != 1:
        return None
    ((server_type, impls),) = block.items()
    if not isinstance(impls, dict) or len(impls) != 1:
        return None
    ((impl, body),) = impls.items()
    return (str(server_type), str(impl), body) if isinstance(body, dict) else None
