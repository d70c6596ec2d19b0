"""Stand-in for ``envkit.resolve`` (build branch) until it is merged: same names, same calls.

``resolve_closure`` pins the closure for the *target* with ``uv pip compile --format
pylock.toml --python-platform <arch>-manylinux_<floor> --python-version 3.13 --only-binary
:all:`` (PEP 751 output carries each file's URL and sha256); ``fetch_wheels`` downloads the
exact files into a sha256-addressed cache and verifies them. uv runs with ``--no-config`` and
none of the user's ``UV_*``/``PIP_*`` variables.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import tomllib
import urllib.request
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from envkit.converters.sandbox import uv_env
from packaging.utils import canonicalize_name

if TYPE_CHECKING:
    from collections.abc import Sequence

    from envkit.target import Target

__all__ = ["FetchError", "PinnedWheel", "ResolveError", "WheelCache", "cache_root",
           "fetch_wheels", "resolve_closure", "uv_bin"]

DEFAULT_INDEX_URL = "https://pypi.org/simple"


class ResolveError(RuntimeError):
    """uv could not resolve the requirements for the target."""


class FetchError(RuntimeError):
    """A wheel could not be downloaded, or its sha256 differs from the lock."""


@dataclass(frozen=True)
class PinnedWheel:
    name: str
    version: str
    filename: str
    url: str
    sha256: str | None


def uv_bin() -> str:
    from uv import find_uv_bin

    return find_uv_bin()


def cache_root() -> Path:
    """``$ENVKIT_CACHE_DIR`` or ``$XDG_CACHE_HOME/envkit`` (``~/.cache/envkit``)."""
    if explicit := os.environ.get("ENVKIT_CACHE_DIR"):
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "envkit"


def _cache_key(requirements: Sequence[str], target: Target, indexes: Sequence[str],
               find_links: Sequence[Path]) -> str:
    """Everything that can change the answer: inputs, target, indexes, find-links files, uv."""
    links = sorted((w.name, hashlib.sha256(w.read_bytes()).hexdigest())
                   for p in find_links for w in Path(p).glob("*.whl"))
    blob = json.dumps([sorted(requirements), str(target), list(indexes), links, _uv_version()])
    return hashlib.sha256(blob.encode()).hexdigest()


def _uv_version() -> str:
    try:
        return version("uv")
    except PackageNotFoundError:
        return "unknown"


def resolve_closure(
    requirements: Sequence[str],
    target: Target,
    *,
    find_links: Sequence[Path] = (),
    index_url: str | None = None,
    extra_index_urls: Sequence[str] = (),
) -> list[PinnedWheel]:
    """Pins for ``target``; a hit in the resolution cache skips uv and the network.

    :raises ResolveError: uv failed (its reason in the message).
    """
    indexes = [index_url or DEFAULT_INDEX_URL, *extra_index_urls]
    key = _cache_key(requirements, target, indexes, find_links)
    key_path = cache_root() / "resolve" / f"{key}.json"
    with contextlib.suppress(OSError, ValueError, TypeError):
        return [PinnedWheel(**row) for row in json.loads(key_path.read_text("utf-8"))]
    pins = _compile(requirements, target, find_links, indexes)
    key_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = key_path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps([asdict(p) for p in pins]), "utf-8")
    tmp.replace(key_path)
    return pins


def _compile(requirements: Sequence[str], target: Target, find_links: Sequence[Path],
             indexes: Sequence[str]) -> list[PinnedWheel]:
    major, minor = target.glibc_floor
    with tempfile.TemporaryDirectory(prefix="envkit-resolve-") as tmp:
        work = Path(tmp)
        (work / "requirements.in").write_text("\n".join(requirements) + "\n", "utf-8")
        cmd = [uv_bin(), "pip", "compile", "requirements.in", "--no-config", "--no-header",
               "--python-platform", f"{target.arch}-manylinux_{major}_{minor}",
               "--python-version", f"{target.python[0]}.{target.python[1]}",
               "--only-binary", ":all:", "--format", "pylock.toml", "-o", "pylock.toml",
               "--index-url", indexes[0]]
        cmd += [a for u in indexes[1:] for a in ("--extra-index-url", u)]
        cmd += [a for p in find_links for a in ("--find-links", str(Path(p).resolve()))]
        proc = subprocess.run(cmd, cwd=work, env=uv_env(), capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            reason = " ".join(ln.strip() for ln in proc.stderr.splitlines()[-8:] if ln.strip())
            msg = f"uv could not resolve the closure for {target}: {reason}"
            raise ResolveError(msg)
        data = tomllib.loads((work / "pylock.toml").read_text("utf-8"))
    return sorted((_pin(pkg, work) for pkg in data.get("packages", [])), key=lambda p: p.name)


def _pin(pkg: dict, base: Path) -> PinnedWheel:
    wheels = pkg.get("wheels") or []
    if not wheels:
        msg = f"the lock has no wheel for {pkg.get('name')!r}"
        raise ResolveError(msg)
    wheel = wheels[0]
    url = wheel.get("url") or (base / wheel["path"]).resolve().as_uri()
    filename = wheel.get("name") or unquote(urlparse(url).path.rsplit("/", 1)[-1])
    sha = (wheel.get("hashes") or {}).get("sha256")
    return PinnedWheel(canonicalize_name(pkg["name"]), str(pkg["version"]), filename, url, sha)


class WheelCache:
    """``<root>/<sha256[:2]>/<sha256>/<filename>``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def lookup(self, pin: PinnedWheel) -> Path | None:
        if pin.sha256 is None:
            return None
        path = self.root / pin.sha256[:2] / pin.sha256 / pin.filename
        return path if path.is_file() else None


def fetch_wheels(pins: Sequence[PinnedWheel], dest: Path, *, cache: WheelCache,
                 progress: object = None) -> list[Path]:
    """Put the exact, sha256-verified files of ``pins`` into ``dest``.

    :raises FetchError: download failed or hash mismatch.
    """
    del progress
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for pin in pins:
        source = cache.lookup(pin) or _download(pin, cache)
        target = dest / pin.filename
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
        out.append(target)
    return sorted(out)


def _download(pin: PinnedWheel, cache: WheelCache) -> Path:
    cache.root.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".dl-", dir=cache.root)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(pin.url, timeout=120) as resp:
            while chunk := resp.read(1 << 16):
                digest.update(chunk)
                out.write(chunk)
        sha = digest.hexdigest()
        if pin.sha256 is not None and sha != pin.sha256:
            msg = f"sha256 mismatch for {pin.filename}: lock {pin.sha256}, download {sha}"
            raise FetchError(msg)
        final = cache.root / sha[:2] / sha / pin.filename
        final.parent.mkdir(parents=True, exist_ok=True)
        Path(tmp).replace(final)
        return final
    except OSError as exc:
        msg = f"could not download {pin.filename} from {pin.url}: {exc}"
        raise FetchError(msg) from None
    finally:
        Path(tmp).unlink(missing_ok=True)
