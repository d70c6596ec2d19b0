"""Resolve a wheel closure for a *foreign* target with uv: the pins, not the files.

pip and pip-tools evaluate markers against the host (pip-tools ignores ``--platform``
silently), so the closure is resolved by ``uv pip compile --python-platform
<arch>-manylinux_<floor> --python-version 3.13``. Not ``--only-binary :all:``: with it, uv
silently backtracks past releases whose dependency ships only an sdist (hydra-core >= 1.1
needs the sdist-only antlr4-python3-runtime 4.9.*, so it fell back to hydra-core 0.11.3,
which cannot start). The pylock.toml output (PEP 751) carries each file's URL and sha256; a
second, ``--offline`` run in the annotated requirements.txt format says who asked for what.
"""

from __future__ import annotations

import functools
import hashlib
import json
import tempfile
import tomllib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from envkit.errors import FailedError
from envkit.model.tree import sha256_file
from envkit.supply.cache import load_entry, store_entry
from envkit.supply.uvcmd import (
    DEFAULT_INDEX_URL,
    INPUT_NAME,
    Runner,
    UvSources,
    clean_env,
    compile_command,
    run_subprocess,
    uv_bin,
    uv_version,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from packaging.tags import Tag

    from envkit.model.target import Target

__all__ = ["PinnedWheel", "ResolutionCache", "ResolveError", "parse_annotations", "parse_pylock",
           "resolve_closure"]

_RESOLVER_MODE = "wheels-else-sdist"
"""Part of the resolution cache key: entries made under ``--only-binary :all:`` (which pinned
hydra-core 0.11.3) must not be reused now that sdist-only releases are allowed."""


class ResolveError(FailedError, RuntimeError):
    """uv could not resolve the requirements for the target (message carries uv's reason)."""


@dataclass(frozen=True, slots=True)
class PinnedWheel:
    """One file of the closure."""

    name: str
    version: str
    filename: str
    url: str
    sha256: str | None
    requested_by: tuple[str, ...]
    """Parents that require it; a direct requirement appears as ``requirement: <line>``."""
    sdist: bool = False
    """``filename``/``url``/``sha256`` are an sdist's: the release has no wheel for the target."""
    built_from: tuple[str, str] | None = None
    """``(sdist url, sdist sha256)`` when this wheel was built here from that sdist."""


def parse_pylock(text: str, base: Path, tags: Sequence[Tag] = ()) -> list[PinnedWheel]:
    """The pin of each package of a pylock.toml (``requested_by`` left empty).

    uv lists every wheel of a release that the target can install (e.g. a manylinux one and
    ``py3-none-any``); the one the installer would pick (first in ``tags``) is kept. A
    release with no such wheel is listed by its sdist (``sdist``).

    :raises ResolveError: a package has neither a wheel nor an sdist.
    """
    data = tomllib.loads(text)
    pins = []
    for pkg in data.get("packages", []):
        wheels = pkg.get("wheels") or []
        sdist = pkg.get("sdist")
        if not wheels and not isinstance(sdist, dict):
            msg = f"the lock has neither a wheel nor an sdist for {pkg.get('name')!r}"
            raise ResolveError(msg)
        dist: dict[str, Any] = (_best_wheel(wheels, tags) if tags else wheels[0]) \
            if wheels else sdist
        url = dist.get("url") or (base / dist["path"]).resolve().as_uri()
        filename = dist.get("name") or unquote(urlparse(url).path.rsplit("/", 1)[-1])
        sha = (dist.get("hashes") or {}).get("sha256")
        pins.append(PinnedWheel(canonicalize_name(pkg["name"]), str(pkg["version"]), filename,
                                url, sha, (), sdist=not wheels))
    return pins


def _best_wheel(wheels: list[dict[str, Any]], tags: Sequence[Tag]) -> dict[str, Any]:
    """The wheel (a pylock.toml table, as parsed) the installer would pick: best tag first."""
    rank = {tag: i for i, tag in enumerate(tags)}

    def score(wheel: dict[str, Any]) -> int:
        url = str(wheel.get("url") or wheel.get("path") or "")
        name = str(wheel.get("name") or unquote(url.rsplit("/", 1)[-1]))
        try:
            wtags = parse_wheel_filename(name)[3]
        except InvalidWheelFilename:
            return len(rank) + 1
        return min((rank.get(t, len(rank)) for t in wtags), default=len(rank))

    return min(wheels, key=score)


def parse_annotations(text: str) -> dict[str, tuple[str, ...]]:
    """``name -> via`` from uv's annotated requirements.txt output."""
    via: dict[str, list[str]] = {}
    current: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not raw.startswith((" ", "#")):
            current = canonicalize_name(line.split("==", 1)[0].split("[", 1)[0].strip())
            via[current] = []
        elif current and line.startswith("# via"):
            rest = line.removeprefix("# via").strip()
            if rest:
                via[current].append(rest)
        elif current and line.startswith("#   "):
            via[current].append(line.removeprefix("#").strip())
    return {name: tuple(parents) for name, parents in via.items()}


def _direct_lines(requirements: Sequence[str]) -> dict[str, list[str]]:
    direct: dict[str, list[str]] = {}
    for line in requirements:
        try:
            name = canonicalize_name(Requirement(line).name)
        except InvalidRequirement:
            continue
        direct.setdefault(name, []).append(line)
    return direct


def _requested_by(name: str, via: Mapping[str, tuple[str, ...]],
                  direct: Mapping[str, list[str]]) -> tuple[str, ...]:
    out: list[str] = []
    for parent in via.get(name, ()):
        if parent.startswith("-r "):
            out += [f"requirement: {line}" for line in direct.get(name, [parent])]
        else:
            out.append(canonicalize_name(parent))
    if not out and name in direct:
        out = [f"requirement: {line}" for line in direct[name]]
    return tuple(dict.fromkeys(out))


class ResolutionCache:
    """Resolver output keyed by everything that can change it; hits skip uv (and the network)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def key(self, requirements: Sequence[str], target: Target, indexes: Sequence[str],
            find_links: Sequence[Path]) -> str:
        blob = json.dumps({
            "requirements": sorted(requirements),
            "target": [target.arch, list(target.python), list(target.glibc_floor)],
            "indexes": list(indexes),
            "find_links": [_listing(Path(p)) for p in find_links],
            "uv": uv_version(),
            "mode": _RESOLVER_MODE,
        }, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> list[PinnedWheel] | None:
        """The pins stored under ``key`` when the entry is this user's own and unedited
        (``envkit.supply.root``); None: resolve again."""
        rows = load_entry(self.root, f"{key}.json")
        try:
            return [PinnedWheel(**{**r, "requested_by": tuple(r["requested_by"]),
                                   "built_from": tuple(r["built_from"])
                                   if r.get("built_from") else None}) for r in rows]
        except (TypeError, KeyError):  # no entry (None), or not the shape ``put`` writes
            return None

    def put(self, key: str, pins: Sequence[PinnedWheel]) -> None:
        store_entry(self.root, f"{key}.json", [asdict(p) for p in pins])


def _listing(folder: Path) -> list[object]:
    """find-links contents as (name, size, mtime): adding a wheel there changes the key."""
    if not folder.is_dir():
        return [str(folder)]
    files = sorted(p for p in folder.iterdir() if p.suffix == ".whl")
    return [str(folder.resolve())] + [[p.name, p.stat().st_size, p.stat().st_mtime_ns]
                                      for p in files]


def resolve_closure(
    requirements: Sequence[str],
    target: Target,
    *,
    find_links: Sequence[Path] = (),
    index_url: str | None = None,
    extra_index_urls: Sequence[str] = (),
    runner: Runner = run_subprocess,
    cache: ResolutionCache | None = None,
    uv_cache_dir: Path | None = None,
    offline: bool = False,
    python_version: str | None = None,
    refresh: bool = False,
    extra_args: Sequence[str] = (),
) -> list[PinnedWheel]:
    """Pin every wheel ``requirements`` need on ``target``, sorted by name.

    ``offline`` resolves from uv's cache and ``find_links`` only. A ``cache`` hit returns the
    stored pins without running uv (``refresh`` re-resolves and overwrites the entry).
    ``python_version`` (e.g. ``3.13.14``) overrides the target's ``major.minor`` when a
    requirement's ``Requires-Python`` needs a patch floor.

    :raises ResolveError: uv failed (no matching wheel for the target, conflict, no network).
    """
    indexes = [index_url or DEFAULT_INDEX_URL, *extra_index_urls]
    key = ""
    if cache:  # a file argument counts by its content, not its path
        args = [sha256_file(Path(a)) if Path(a).is_file() else a for a in extra_args]
        key = cache.key(requirements, target, [*indexes, python_version or "", *args], find_links)
    if cache and not refresh and (hit := cache.get(key)) is not None:
        return hit
    sources = UvSources(index_url, extra_index_urls, find_links, uv_cache_dir)
    argv = functools.partial(compile_command, uv_bin(), target, python_version=python_version,
                             extra_args=extra_args)
    with tempfile.TemporaryDirectory(prefix="envkit-resolve-") as tmp:
        work = Path(tmp)
        (work / INPUT_NAME).write_text("\n".join(requirements) + "\n", "utf-8")
        lock = _run_uv(runner, argv(replace(sources, offline=offline),
                                    output_format="pylock.toml"), work, target)
        notes = _run_uv(runner, argv(replace(sources, offline=True),
                                     output_format="requirements.txt"), work, target)
        pins = parse_pylock(lock, work, target.tags())
    via, direct = parse_annotations(notes), _direct_lines(requirements)
    pins = sorted((replace(p, requested_by=_requested_by(p.name, via, direct)) for p in pins),
                  key=lambda p: (p.name, p.filename))
    if cache:
        cache.put(key, pins)
    return pins


def _run_uv(runner: Runner, cmd: list[str], cwd: Path, target: Target) -> str:
    result = runner(cmd, env=clean_env(), cwd=cwd)
    if result.returncode != 0:
        reason = _uv_reason(result.stderr)
        msg = f"uv could not resolve the closure for {target}: {reason}"
        raise ResolveError(msg)
    return result.stdout


def _uv_reason(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith("warning:")]
    return " ".join(useful[-8:]) or "uv exited non-zero without a message"
