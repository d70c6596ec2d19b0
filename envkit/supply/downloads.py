"""Fetch the exact files of a resolved closure into a package's ``wheels/``: each downloaded
once into the ``WheelCache``, verified against the lock's sha256, and linked from there by
later builds without touching the network (sdists: see :func:`vendor_pins`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from envkit.errors import FailedError
from envkit.model.tree import sha256_file
from envkit.supply.resolve import PinnedWheel
from envkit.supply.sdists import (
    SdistBuild,
    build_pure_wheel,
    platform_wheels,
    refuse_compiled,
    sdist_cache_dir,
)
from envkit.supply.wheelcache import WheelCache, link_or_copy, private_dirs, yours

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["FetchError", "FetchProgress", "vendor_pins"]

_CHUNK = 1 << 16


class FetchError(FailedError, RuntimeError):
    """A wheel could not be downloaded, or its sha256 did not match the lock."""


class FetchProgress(Protocol):
    """Progress sink for downloads (the CLI draws rich bars on stderr; the library never prints)."""

    def begin(self, filename: str, size: int | None) -> None: ...
    def advance(self, filename: str, nbytes: int) -> None: ...
    def end(self, filename: str, *, cached: bool) -> None: ...


def vendor_pins(
    pins: Sequence[PinnedWheel],
    dest: Path,
    *,
    cache: WheelCache,
    progress: FetchProgress | None = None,
    sdist_build: SdistBuild | None = None,
) -> list[PinnedWheel]:
    """Put the exact files of ``pins`` into ``dest`` (fresh copies, sha256-verified).

    Cached files are linked/copied without touching the network. An sdist pin is vendored
    as the pure wheel built from it (cached by the sdist's sha256: a warm run neither
    downloads nor rebuilds); its returned pin names that wheel and records ``built_from``.

    :raises FetchError: a download failed or a file's sha256 differs from the lock.
    :raises SdistBuildError: an sdist did not build, or built a platform wheel.
    """
    dest.mkdir(parents=True, exist_ok=True)
    wheels = [p for p in pins if not p.sdist]
    with ThreadPoolExecutor(max_workers=4) as pool:
        cached = list(pool.map(lambda p: _ensure_cached(p, cache, progress), wheels))
    out = list(wheels)
    for pin, source in zip(wheels, cached, strict=True):
        link_or_copy(source, dest / pin.filename)
    for pin in (p for p in pins if p.sdist):
        built = _built_wheel(pin, cache, progress, sdist_build or SdistBuild())
        link_or_copy(built, dest / built.name)
        out.append(PinnedWheel(pin.name, pin.version, built.name, pin.url, sha256_file(built),
                               pin.requested_by, built_from=(pin.url, pin.sha256 or "")))
    return sorted(out, key=lambda p: (p.name, p.filename))


def _built_wheel(pin: PinnedWheel, cache: WheelCache, progress: FetchProgress | None,
                 how: SdistBuild) -> Path:
    if pin.sha256 is None:
        msg = f"{pin.name}: the lock gives no sha256 for its sdist {pin.filename}"
        raise FetchError(msg)
    project = f"{pin.name}=={pin.version}"
    hit = sorted(sdist_cache_dir(cache.root, pin.sha256).glob("*.whl"))
    if hit and yours(hit[0], cache.root):  # a built wheel has no hash to check it by
        return hit[0]
    refuse_compiled(project, platform_wheels(how.index_url, pin.name, pin.version))
    sdist = _ensure_cached(pin, cache, progress)
    return build_pure_wheel(sdist, project, pin.sha256, cache.root, how=how)


def _ensure_cached(pin: PinnedWheel, cache: WheelCache, progress: FetchProgress | None) -> Path:
    hit = cache.lookup(pin.sha256, pin.filename)
    if hit is not None:
        if progress:
            progress.end(pin.filename, cached=True)
        return hit
    private_dirs(cache.root)
    fd, tmp_name = tempfile.mkstemp(prefix=".dl-", suffix=".part", dir=cache.root)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            digest = _download(pin, out, progress)
        if pin.sha256 is not None and digest != pin.sha256:
            msg = (f"sha256 mismatch for {pin.filename}: the lock says {pin.sha256}, "
                   f"the download is {digest}")
            raise FetchError(msg)
        stored = cache.store(tmp, digest, pin.filename)
    finally:
        tmp.unlink(missing_ok=True)
    if progress:
        progress.end(pin.filename, cached=False)
    return stored


def _download(pin: PinnedWheel, out: BinaryIO, progress: FetchProgress | None) -> str:
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(pin.url, timeout=120) as resp:
            size = resp.headers.get("Content-Length")
            if progress:
                progress.begin(pin.filename, int(size) if size else None)
            while chunk := resp.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
                if progress:
                    progress.advance(pin.filename, len(chunk))
    except (OSError, ValueError) as exc:
        msg = f"could not download {pin.filename} from {pin.url}: {exc}"
        raise FetchError(msg) from None
    return digest.hexdigest()
