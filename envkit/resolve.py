"""Resolve a wheel closure for a *foreign* target with uv, and fetch the exact files.

pip and pip-tools evaluate markers against the host (pip-tools ignores ``--platform``
silently), so the closure is resolved by ``uv pip compile --python-platform
<arch>-manylinux_<floor> --python-version 3.13``. Not ``--only-binary :all:``: with it, uv
silently backtracks past releases whose dependency ships only an sdist (hydra-core >= 1.1
needs the sdist-only antlr4-python3-runtime 4.9.*, so it fell back to hydra-core 0.11.3,
which cannot start). uv still takes a release's wheel whenever one fits the target; a pin
that is an sdist is built into a wheel on the host and must come out pure
(``envkit.sdists``), else the build fails naming the project. The pylock.toml
output (PEP 751) carries each file's URL and sha256; a second, ``--offline`` run in the
annotated requirements.txt format, served from uv's own cache, says who asked for what.

uv never sees the user's configuration: ``--no-config``, no inherited ``UV_*``/``PIP_*``
variables, ``PIP_CONFIG_FILE=/dev/null``. Resolutions are cached by (requirements, target,
indexes, find-links contents, uv version) and files by sha256, so a warm build makes no
network request at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote, urlparse

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from envkit.cache import cache_root
from envkit.sdists import (
    build_command,
    build_pure_wheel,
    platform_wheels,
    refuse_compiled,
    sdist_cache_dir,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.target import Target

__all__ = [
    "DEFAULT_INDEX_URL",
    "CompletedRun",
    "FetchError",
    "FetchProgress",
    "PinnedWheel",
    "ResolutionCache",
    "ResolveError",
    "Runner",
    "SdistBuild",
    "WheelCache",
    "cache_root",
    "clean_env",
    "compile_command",
    "fetch_wheels",
    "parse_annotations",
    "parse_pylock",
    "python_platform",
    "resolve_closure",
    "run_subprocess",
    "target_tags",
    "uv_bin",
    "uv_version",
    "vendor_pins",
]

DEFAULT_INDEX_URL = "https://pypi.org/simple"
_INPUT_NAME = "requirements.in"
_KEEP_ENV = (
    "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    "http_proxy", "https_proxy", "all_proxy", "no_proxy",
)
"""Only what locating binaries, TLS and proxies need; never ``UV_*``/``PIP_*`` user settings."""
_CHUNK = 1 << 16
_RESOLVER_MODE = "wheels-else-sdist"
"""Part of the resolution cache key: entries made under ``--only-binary :all:`` (which pinned
hydra-core 0.11.3) must not be reused now that sdist-only releases are allowed."""


class ResolveError(RuntimeError):
    """uv could not resolve the requirements for the target (message carries uv's reason)."""


class FetchError(RuntimeError):
    """A wheel could not be downloaded, or its sha256 did not match the lock."""


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class CompletedRun:
    returncode: int
    stdout: str
    stderr: str


class Runner(Protocol):
    """Runs one command; tests pass a recorder instead of running uv."""

    def __call__(self, cmd: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> CompletedRun:
        ...


class FetchProgress(Protocol):
    """Progress sink for downloads (the CLI draws rich bars on stderr; the library never prints)."""

    def begin(self, filename: str, size: int | None) -> None: ...
    def advance(self, filename: str, nbytes: int) -> None: ...
    def end(self, filename: str, *, cached: bool) -> None: ...


def run_subprocess(cmd: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> CompletedRun:
    """The real runner: capture output, never raise on a non-zero exit."""
    proc = subprocess.run(
        list(cmd), env=dict(env), cwd=cwd, capture_output=True, text=True, check=False
    )
    return CompletedRun(proc.returncode, proc.stdout, proc.stderr)


def clean_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A subprocess environment free of the user's pip/uv configuration.

    An allowlist (stricter than ``envkit.isolation.isolated_env``): the resolver must not
    see anything that can change a resolution, only what PATH, TLS and proxies need."""
    env = os.environ if environ is None else environ
    kept = {k: env[k] for k in _KEEP_ENV if k in env}
    kept.setdefault("PATH", os.defpath)
    kept["PIP_CONFIG_FILE"] = os.devnull
    kept["UV_NO_CONFIG"] = "1"
    return kept


def uv_version() -> str:
    """Version of the ``uv`` distribution envkit runs (part of the resolution cache key)."""
    try:
        return version("uv")
    except PackageNotFoundError:
        return "unknown"


def uv_bin() -> str:
    """The uv executable shipped with the ``uv`` wheel envkit depends on (else PATH's)."""
    try:
        from uv import find_uv_bin
    except ImportError:
        return shutil.which("uv") or "uv"
    return find_uv_bin()


def python_platform(target: Target) -> str:
    """uv's ``--python-platform`` value, e.g. ``aarch64-manylinux_2_28``."""
    major, minor = target.glibc_floor
    return f"{target.arch}-manylinux_{major}_{minor}"


def compile_command(
    uv: str,
    target: Target,
    *,
    output_format: str,
    find_links: Sequence[Path] = (),
    index_url: str | None = None,
    extra_index_urls: Sequence[str] = (),
    cache_dir: Path | None = None,
    offline: bool = False,
    python_version: str | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """argv for ``uv pip compile`` of ``requirements.in`` for ``target`` (never the host).

    ``extra_args`` (e.g. ``--constraints FILE``, ``--exclude-newer DATE``) go to uv as given."""
    cmd = [
        uv, "pip", "compile", _INPUT_NAME, "--no-config", "--system-certs", "--no-header",
        "--python-platform", python_platform(target),
        "--python-version", python_version or f"{target.python[0]}.{target.python[1]}",
        "--no-python-downloads", "--format", output_format,
        # Any interpreter will do (it only reads an sdist-only project's metadata); naming one
        # skips uv's search of PATH, which costs seconds behind pyenv shims. The target comes
        # from the flags above.
        "--python", sys.executable,
        "--index-url", index_url or DEFAULT_INDEX_URL,
    ]
    for url in extra_index_urls:
        cmd += ["--extra-index-url", url]
    for link in find_links:
        cmd += ["--find-links", str(Path(link).resolve())]
    if cache_dir is not None:
        cmd += ["--cache-dir", str(cache_dir)]
    if offline:
        cmd.append("--offline")
    return [*cmd, *extra_args]


def parse_pylock(
    text: str, base: Path, tags: Sequence[Tag] = ()
) -> list[tuple[str, str, str, str, str | None, bool]]:
    """``(name, version, filename, url, sha256, is_sdist)`` per package of a pylock.toml.

    uv lists every wheel of a release that the target can install (e.g. a manylinux one and
    ``py3-none-any``); the one the installer would pick (first in ``tags``) is kept. A
    release with no such wheel is listed by its sdist (``is_sdist``).

    :raises ResolveError: a package has neither a wheel nor an sdist.
    """
    data = tomllib.loads(text)
    rows = []
    for pkg in data.get("packages", []):
        wheels = pkg.get("wheels") or []
        sdist = pkg.get("sdist")
        if not wheels and not isinstance(sdist, dict):
            msg = f"the lock has neither a wheel nor an sdist for {pkg.get('name')!r}"
            raise ResolveError(msg)
        dist = (_best_wheel(wheels, tags) if tags else wheels[0]) if wheels else sdist
        url = dist.get("url") or (base / dist["path"]).resolve().as_uri()
        filename = dist.get("name") or unquote(urlparse(url).path.rsplit("/", 1)[-1])
        sha = (dist.get("hashes") or {}).get("sha256")
        rows.append((canonicalize_name(pkg["name"]), str(pkg["version"]), filename, url, sha,
                     not wheels))
    return rows


def target_tags(target: Target) -> list[Tag]:
    """Tags the target installs, most preferred first (an explicit target, never the host)."""
    py = target.python
    major, floor = target.glibc_floor
    platforms = [f"manylinux_{major}_{m}_{target.arch}" for m in range(floor, 16, -1)]
    platforms.append(f"manylinux2014_{target.arch}")
    return [*cpython_tags(py, [f"cp{py[0]}{py[1]}", "abi3", "none"], platforms),
            *compatible_tags(py, f"cp{py[0]}{py[1]}", platforms)]


def _best_wheel(wheels: list[dict[str, object]], tags: Sequence[Tag]) -> dict[str, object]:
    rank = {tag: i for i, tag in enumerate(tags)}

    def score(wheel: dict[str, object]) -> int:
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


def _requested_by(
    name: str, via: Mapping[str, tuple[str, ...]], direct: Mapping[str, list[str]]
) -> tuple[str, ...]:
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
        path = self.root / f"{key}.json"
        try:
            rows = json.loads(path.read_text("utf-8"))
            return [PinnedWheel(**{**r, "requested_by": tuple(r["requested_by"]),
                                   "built_from": tuple(r["built_from"])
                                   if r.get("built_from") else None}) for r in rows]
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def put(self, key: str, pins: Sequence[PinnedWheel]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.root / f"{key}.json", json.dumps([asdict(p) for p in pins], indent=1))


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
    stored pins without running uv (``refresh`` re-resolves and overwrites the entry,
    to pick up new releases). ``python_version`` (e.g. ``3.13.14``) overrides the
    target's ``major.minor`` when a requirement's ``Requires-Python`` needs a patch floor.

    :raises ResolveError: uv failed (no matching wheel for the target, conflict, no network).
    """
    indexes = [index_url or DEFAULT_INDEX_URL, *extra_index_urls]
    key = cache.key(requirements, target, [*indexes, python_version or "",
                                           *_arg_digests(extra_args)], find_links) \
        if cache else ""
    if cache and not refresh and (hit := cache.get(key)) is not None:
        return hit
    flags = {"find_links": find_links, "index_url": index_url,
             "extra_index_urls": extra_index_urls, "cache_dir": uv_cache_dir,
             "python_version": python_version, "extra_args": extra_args}
    with tempfile.TemporaryDirectory(prefix="envkit-resolve-") as tmp:
        work = Path(tmp)
        (work / _INPUT_NAME).write_text("\n".join(requirements) + "\n", "utf-8")
        uv = uv_bin()
        lock = _run_uv(runner, compile_command(uv, target, output_format="pylock.toml",
                                               offline=offline, **flags), work, target)
        notes = _run_uv(runner, compile_command(uv, target, output_format="requirements.txt",
                                                offline=True, **flags), work, target)
        rows = parse_pylock(lock, work, target_tags(target))
    via, direct = parse_annotations(notes), _direct_lines(requirements)
    pins = sorted((PinnedWheel(n, v, f, u, s, _requested_by(n, via, direct), sdist=sd)
                   for n, v, f, u, s, sd in rows), key=lambda p: (p.name, p.filename))
    if cache:
        cache.put(key, pins)
    return pins


def _arg_digests(args: Sequence[str]) -> list[str]:
    """``extra_args`` for the cache key: a file argument by its content, not its path."""
    return [_sha256(Path(a)) if Path(a).is_file() else a for a in args]


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


class WheelCache:
    """Content-addressed wheel store: ``<root>/<sha256[:2]>/<sha256>/<filename>``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path_for(self, sha256: str, filename: str) -> Path:
        return self.root / sha256[:2] / sha256 / filename

    def lookup(self, pin: PinnedWheel) -> Path | None:
        if pin.sha256 is None:
            return None
        path = self.path_for(pin.sha256, pin.filename)
        return path if path.is_file() else None

    def store(self, source: Path, sha256: str, filename: str) -> Path:
        """Move ``source`` (already verified) into the store; first writer wins."""
        final = self.path_for(sha256, filename)
        final.parent.mkdir(parents=True, exist_ok=True)
        source.chmod(0o444)  # hard-linked into packages: nobody may edit the cached bytes
        source.replace(final)
        return final


@dataclass(frozen=True)
class SdistBuild:
    """Where an sdist's build dependencies come from (the build's own indexes)."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[Path, ...] = ()
    uv_cache_dir: Path | None = None
    runner: Runner = run_subprocess

    def command(self, sdist: Path, out_dir: Path) -> list[str]:
        return build_command(uv_bin(), sdist, out_dir,
                             index_url=self.index_url or DEFAULT_INDEX_URL,
                             extra_index_urls=self.extra_index_urls,
                             find_links=self.find_links, cache_dir=self.uv_cache_dir)


def fetch_wheels(
    pins: Sequence[PinnedWheel],
    dest: Path,
    *,
    cache: WheelCache,
    progress: FetchProgress | None = None,
    workers: int = 4,
    sdist_build: SdistBuild | None = None,
) -> list[Path]:
    """Put the wheels of ``pins`` into ``dest`` (see ``vendor_pins``); their paths, sorted."""
    vendored = vendor_pins(pins, dest, cache=cache, progress=progress, workers=workers,
                           sdist_build=sdist_build)
    return sorted(dest / p.filename for p in vendored)


def vendor_pins(
    pins: Sequence[PinnedWheel],
    dest: Path,
    *,
    cache: WheelCache,
    progress: FetchProgress | None = None,
    workers: int = 4,
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
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        cached = list(pool.map(lambda p: _ensure_cached(p, cache, progress), wheels))
    out = list(wheels)
    for pin, source in zip(wheels, cached, strict=True):
        _link_or_copy(source, dest / pin.filename)
    for pin in (p for p in pins if p.sdist):
        built = _built_wheel(pin, cache, progress, sdist_build or SdistBuild())
        _link_or_copy(built, dest / built.name)
        out.append(PinnedWheel(pin.name, pin.version, built.name, pin.url, _sha256(built),
                               pin.requested_by, built_from=(pin.url, pin.sha256 or "")))
    return sorted(out, key=lambda p: (p.name, p.filename))


def _built_wheel(pin: PinnedWheel, cache: WheelCache, progress: FetchProgress | None,
                 how: SdistBuild) -> Path:
    if pin.sha256 is None:
        msg = f"{pin.name}: the lock gives no sha256 for its sdist {pin.filename}"
        raise FetchError(msg)
    hit = sorted(sdist_cache_dir(cache.root, pin.sha256).glob("*.whl"))
    if hit:
        return hit[0]
    refuse_compiled(f"{pin.name}=={pin.version}",
                    platform_wheels(how.index_url or DEFAULT_INDEX_URL, pin.name, pin.version))
    sdist = _ensure_cached(pin, cache, progress)
    return build_pure_wheel(sdist, f"{pin.name}=={pin.version}", pin.sha256, cache.root,
                            runner=how.runner, env=clean_env(), make_command=how.command)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _ensure_cached(pin: PinnedWheel, cache: WheelCache, progress: FetchProgress | None) -> Path:
    hit = cache.lookup(pin)
    if hit is not None:
        if progress:
            progress.end(pin.filename, cached=True)
        return hit
    cache.root.mkdir(parents=True, exist_ok=True)
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


def _download(pin: PinnedWheel, out: object, progress: FetchProgress | None) -> str:
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(pin.url, timeout=120) as resp:
            size = resp.headers.get("Content-Length")
            if progress:
                progress.begin(pin.filename, int(size) if size else None)
            while chunk := resp.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)  # type: ignore[attr-defined]
                if progress:
                    progress.advance(pin.filename, len(chunk))
    except (OSError, ValueError) as exc:
        msg = f"could not download {pin.filename} from {pin.url}: {exc}"
        raise FetchError(msg) from None
    return digest.hexdigest()


def _link_or_copy(source: Path, target: Path) -> None:
    """Hard-link when the cache shares the filesystem (free), else copy."""
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
