"""Turn a pinned pure-Python sdist into the wheel a cluster installs with no egress.

Some projects ship only an sdist (antlr4-python3-runtime 4.9.3, which hydra-core >= 1.1
needs). A wheels-v1 package must hold wheels only, so envkit builds the wheel on the host,
in an isolated ``uv build`` (no user pip/uv configuration), and accepts it only when it is
pure (``*-none-any``): a platform wheel built here would be for the host, not the target.
Built wheels are cached by the sdist's sha256, so a warm build neither rebuilds nor downloads.
"""

from __future__ import annotations

import html
import re
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    canonicalize_version,
    parse_wheel_filename,
)

from envkit.errors import FailedError
from envkit.supply.uvcmd import (
    DEFAULT_INDEX_URL,
    Runner,
    UvSources,
    build_command,
    clean_env,
    run_subprocess,
    uv_bin,
)
from envkit.supply.wheelcache import private_dirs, yours

__all__ = ["SdistBuild", "SdistBuildError", "build_pure_wheel", "is_pure", "platform_wheels",
           "refuse_compiled", "sdist_cache_dir"]

_HREF = re.compile(r'href="([^"#]+)')


class SdistBuildError(FailedError, RuntimeError):
    """An sdist could not be turned into a pure wheel (build failure or platform wheel)."""

    output: str = ""
    """The builder's full output, when a build failed (the message keeps its last lines)."""


def is_pure(filename: str) -> bool:
    """True for a wheel any target installs: every tag is ``<py>-none-any``."""
    try:
        tags = parse_wheel_filename(filename)[3]
    except InvalidWheelFilename:
        return False
    return bool(tags) and all(t.abi == "none" and t.platform == "any" for t in tags)


def platform_wheels(index_url: str, project: str, version: str) -> list[str]:
    """Platform wheels the index lists for ``project==version`` (PEP 503 page).

    A release that ships platform wheels for other targets is a compiled project: building
    its sdist here would compile for the host (slowly, maybe failing on a missing compiler),
    so the build refuses it before trying. An unreachable page gives ``[]`` (build and see)."""
    url = f"{index_url.rstrip('/')}/{canonicalize_name(project)}/"
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            page = resp.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return []
    out = []
    for href in _HREF.findall(page):
        name = html.unescape(href).rsplit("/", 1)[-1]
        try:
            _n, ver, _b, _tags = parse_wheel_filename(name)
        except InvalidWheelFilename:
            continue
        if canonicalize_version(ver) == canonicalize_version(version) and not is_pure(name):
            out.append(name)
    return sorted(out)


def refuse_compiled(project: str, wheels: list[str]) -> None:
    """:raises SdistBuildError: ``wheels`` (the release's platform wheels) is not empty."""
    if wheels:
        raise _no_cross_build(project, f"the release is compiled (it ships platform wheels such "
                                       f"as {wheels[0]})")


def _no_cross_build(project: str, why: str) -> SdistBuildError:
    msg = (f"{project}: PyPI has no wheel for the target, only an sdist, and {why}; a platform "
           "wheel cannot be cross-built for the target here. Pin a release of it that ships "
           "target wheels, or build that wheel on the target and pass it with --wheels-dir")
    return SdistBuildError(msg)


def sdist_cache_dir(root: Path, sdist_sha256: str) -> Path:
    """Where the wheel built from the sdist with this sha256 is kept."""
    return Path(root) / "built" / sdist_sha256[:2] / sdist_sha256


@dataclass(frozen=True, slots=True)
class SdistBuild:
    """How to build an sdist: its build dependencies come from the build's own sources."""

    sources: UvSources = field(default_factory=UvSources)
    runner: Runner = run_subprocess

    @property
    def index_url(self) -> str:
        return self.sources.index_url or DEFAULT_INDEX_URL


def build_pure_wheel(sdist: Path, project: str, sdist_sha256: str, cache_root: Path, *,
                     how: SdistBuild) -> Path:
    """The cached pure wheel built from ``sdist`` (built now on a miss, as ``how`` says).

    :raises SdistBuildError: the build failed or produced a platform-specific wheel.
    """
    final_dir = sdist_cache_dir(cache_root, sdist_sha256)
    hits = sorted(final_dir.glob("*.whl")) if final_dir.is_dir() else []
    if hits and yours(hits[0], cache_root):
        return hits[0]
    if hits:  # someone else's, or writable by others: built again, into a folder of our own
        shutil.rmtree(final_dir, ignore_errors=True)
    private_dirs(final_dir.parent)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=final_dir.parent) as tmp:
        out = Path(tmp) / "dist"
        cmd = build_command(uv_bin(), sdist, out, how.sources)
        result = how.runner(cmd, env=clean_env(), cwd=Path(tmp))
        wheels = sorted(out.glob("*.whl")) if out.is_dir() else []
        if result.returncode != 0 or len(wheels) != 1:
            tail = " ".join((result.stderr or result.stdout).strip().splitlines()[-6:])
            msg = (f"{project}: PyPI has only an sdist ({sdist.name}) and building a wheel "
                   f"from it failed: {tail or 'no wheel was produced'}")
            error = SdistBuildError(msg)
            error.output = result.stderr or result.stdout  # the builder's full text
            raise error
        wheel = wheels[0]
        if not is_pure(wheel.name):
            raise _no_cross_build(project, f"it builds a platform wheel ({wheel.name})")
        staged = Path(tmp) / "ok"
        staged.mkdir()
        shutil.move(str(wheel), staged / wheel.name)
        (staged / wheel.name).chmod(0o444)
        try:
            staged.rename(final_dir)
        except OSError:  # another build won the race: keep its wheel
            if not any(final_dir.glob("*.whl")):
                raise
    return sorted(final_dir.glob("*.whl"))[0]
