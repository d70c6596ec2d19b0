"""``envkit build`` / ``envkit convert package``: plan, vendor, lock, swap in, validate.

Output is swapped in whole (``envkit.supply.atomic``): a failed build leaves the previous output
untouched, and ``wheels/`` never keeps a stale version next to the new one (the "GRPO and Reward
Environments" guide: "Clear wheels/ before rebuilding into it").
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from envkit.converters.gym_tree import (
    GymTreeError,
    ServerSource,
    TreePlan,
    discover_servers,
    plan_tree,
    server_requirements,
)
from envkit.errors import FailedError
from envkit.model.gym_data import DEFAULT_GYM_VERSION, gym_data, runtime_requirements
from envkit.model.lock import LOCK_NAME, Lock, LockedRequirement, LockedWheel
from envkit.model.package import MANIFEST, SERVER_TYPES, load_package
from envkit.model.secrets import secret_left_out
from envkit.model.target import Target
from envkit.model.yamlio import YamlReadError, read_mapping
from envkit.supply.atomic import (
    EscapingPathError,
    make_temp_dir,
    stale_temp_dirs,
    swap_into_place,
    write_files,
    write_text,
)
from envkit.supply.cache import cache_root, uv_cache_under
from envkit.supply.downloads import vendor_pins
from envkit.supply.provenance import package_record, write_provenance
from envkit.supply.resolve import PinnedWheel, ResolutionCache, resolve_closure
from envkit.supply.sdists import SdistBuild
from envkit.supply.uvcmd import Runner, UvSources, run_subprocess, uv_version
from envkit.supply.wheelcache import WheelCache
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions, Inputs
from envkit.validators.wheels.checks import closure_roots

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.supply.downloads import FetchProgress
    from envkit.validate.report import Report

__all__ = [
    "LOCK_NAME",
    "BuildError",
    "BuildRequest",
    "BuildResult",
    "build",
    "convert_package",
]

Log = Callable[[str], None]


class BuildError(FailedError, RuntimeError):
    """The build cannot go on (bad source, resolution or download failure, unsafe output)."""

    exit_code = 2  # kept from before the one error type; the README's "failed" is 1


@dataclass(frozen=True, slots=True)
class BuildRequest:
    """One ``envkit build`` (or ``convert package``) invocation."""

    sources: tuple[Path, ...]
    out: Path
    fmt: str = "wheels-v1"
    target: Target = field(default_factory=Target)
    gym_version: str = DEFAULT_GYM_VERSION
    name: str | None = None
    description: str | None = None
    dataset_dir: Path | None = None
    wheels_dirs: tuple[Path, ...] = ()
    runtime_pins: bool = True
    """Vendor nemo-gym==V, ray[default] and openai at Gym's pins (offline-clean package)."""
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    resolve_offline: bool = False
    cache_dir: Path | None = None
    refresh: bool = False
    """Re-resolve instead of reusing a cached resolution (new releases; files stay cached)."""
    target_source: str = "default"
    """``command line`` or ``default``, for the verdict's report."""
    include: tuple[str, ...] = ()
    """Globs of package paths copied even when they are dotenv or key files (``--include``)."""

    @property
    def data_dir(self) -> Path:
        return self.dataset_dir or self.out.parent / f"{self.out.name}-data"


@dataclass(frozen=True, slots=True)
class BuildResult:
    out: Path
    dataset_dir: Path | None
    report: Report


def build(request: BuildRequest, *, runner: Runner = run_subprocess,
          progress: FetchProgress | None = None, log: Log = lambda _m: None) -> BuildResult:
    """Build a package from Gym server trees.

    :raises BuildError: a source, resolution, download or output problem (nothing replaced).
    """
    try:
        servers = [s for src in request.sources for s in discover_servers(src)]
        name = request.name or servers[0].impl.replace("_", "-")
        plan = plan_tree(servers, request.fmt, name, request.description, request.include)
    except GymTreeError as exc:
        raise BuildError(str(exc)) from None
    for note in plan.notes:
        log(note)
    requirements = _requirements(plan.requirements, request) if request.fmt == "wheels-v1" else []
    return _produce(request, plan, requirements, runner=runner, progress=progress, log=log)


def _requirements(servers: Mapping[str, list[str]], request: BuildRequest
                  ) -> list[tuple[str, str]]:
    """``(requirement, origin)`` pairs: every server's lines, then the runtime pins."""
    pairs = [(line, f"{rel}/requirements.txt")
             for rel, lines in servers.items() for line in lines]
    if request.runtime_pins:
        pairs += [(line, "Gym runtime (server venv install)")
                  for line in runtime_requirements(request.gym_version)]
    return pairs


def convert_package(request: BuildRequest, *, runner: Runner = run_subprocess,
                    progress: FetchProgress | None = None,
                    log: Log = lambda _m: None) -> BuildResult:
    """native-v1 -> wheels-v1: same tree, ``format`` switched, servers' closure vendored.

    :raises BuildError: the source is not a readable native-v1 package.
    """
    src = request.sources[0]
    manifest = _read_manifest(src)
    if manifest.get("format") != "native-v1":
        msg = f"{src}: convert package reads native-v1 packages, not {manifest.get('format')!r}"
        raise BuildError(msg)
    plan = TreePlan()
    for path in sorted(p for p in src.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(src).as_posix()
        if rel.startswith("wheels/") or path.suffix in {".jsonl", ".pyc"}:
            log(f"left out {rel}")
            continue
        if secret_left_out(path, rel, request.include, plan.notes):
            continue
        plan.files[rel] = path
    for note in plan.notes:
        log(note)
    manifest["format"] = "wheels-v1"
    plan.files[MANIFEST] = yaml.safe_dump(manifest, sort_keys=False).encode()
    requirements = _requirements(_package_server_requirements(src), request)
    return _produce(request, plan, requirements, runner=runner, progress=progress, log=log)


def _read_manifest(src: Path) -> dict[str, Any]:
    try:
        return read_mapping(src / MANIFEST)
    except YamlReadError as exc:
        msg = f"{exc} (run `envkit validate {src}`)"
        raise BuildError(msg) from None


def _package_server_requirements(src: Path) -> dict[str, list[str]]:
    out = {}
    for stype in SERVER_TYPES:
        for impl in sorted(p for p in (src / stype).glob("*") if p.is_dir()):
            if (impl / "requirements.txt").is_file() or (impl / "pyproject.toml").is_file():
                server = ServerSource(stype, impl.name, impl, ())
                try:
                    out[server.rel] = server_requirements(server)
                except GymTreeError as exc:
                    raise BuildError(str(exc)) from None
    return out


def _produce(request: BuildRequest, plan: TreePlan, requirements: list[tuple[str, str]], *,
             runner: Runner, progress: FetchProgress | None, log: Log) -> BuildResult:
    out, data_dir = request.out.absolute(), request.data_dir.absolute()
    _refuse_nesting(request)
    _refuse_foreign(out, data_dir if plan.dataset else None)
    for parent in {out.parent, data_dir.parent}:
        parent.mkdir(parents=True, exist_ok=True)
        for stale in stale_temp_dirs(parent):
            log(f"removing stale {stale.name} left by a killed build")
            shutil.rmtree(stale, ignore_errors=True)
    tmp, tmp_data = make_temp_dir(out), None
    try:
        write_files(tmp, plan.files)
        if request.fmt == "wheels-v1" and request.runtime_pins:
            requirements = [*requirements, *_venv_build_requirements(tmp, request)]
        if request.fmt == "wheels-v1":
            _vendor(tmp, requirements, request, runner=runner, progress=progress, log=log)
        if plan.dataset:
            tmp_data = make_temp_dir(data_dir)
            write_files(tmp_data, plan.dataset)
        write_provenance(tmp, package_record(tmp, dataset=tmp_data,
                                             gym_version=request.gym_version))
        swap_into_place(tmp, out)
        if tmp_data is not None:
            swap_into_place(tmp_data, data_dir)
    except EscapingPathError as exc:
        raise BuildError(str(exc)) from None
    finally:
        for leftover in (tmp, tmp_data):
            if leftover is not None and leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)
    log(f"wrote {out}" + (f" and {data_dir}" if plan.dataset else ""))
    dataset_dir = data_dir if plan.dataset else None
    return BuildResult(out, dataset_dir, _validate(out, dataset_dir, request))


def _venv_build_requirements(root: Path, request: BuildRequest) -> list[tuple[str, str]]:
    """Everything ``validate --offline`` will walk for the planned tree (the validator's own
    roots): besides the servers' lines, a pyproject server's ``nemo-gym[dev]`` and build
    requirements, and the built-in servers the configs run without shipping (``vllm_model``).
    """
    pkg = load_package(root)
    options = CheckOptions(target=request.target, gym_version=request.gym_version, offline=True)
    roots, _egress = closure_roots(pkg, Inputs(package=pkg, options=options))
    return [(str(r.requirement), r.origin) for r in roots]


def _vendor(root: Path, requirements: list[tuple[str, str]], request: BuildRequest, *,
            runner: Runner, progress: FetchProgress | None, log: Log) -> None:
    lines = list(dict.fromkeys(line for line, _origin in requirements))
    if not lines:
        msg = ("nothing to vendor: the servers declare no requirements besides nemo-gym; "
               "build with the runtime pins (the default) or use --format native-v1")
        raise BuildError(msg)
    cache = request.cache_dir or cache_root()
    python_version = (gym_data().python_floor(request.target.python)
                      if request.runtime_pins else None)
    log(f"resolving {len(lines)} requirements for {request.target} with uv {uv_version()}"
        + (f" (Python {python_version}: nemo-gym's Requires-Python floor)"
           if python_version else ""))
    try:
        pins = resolve_closure(
            lines, request.target, find_links=request.wheels_dirs,
            index_url=request.index_url, extra_index_urls=request.extra_index_urls,
            runner=runner, cache=ResolutionCache(cache / "resolutions"),
            uv_cache_dir=uv_cache_under(cache), offline=request.resolve_offline,
            python_version=python_version, refresh=request.refresh,
        )
        sdists = [p for p in pins if p.sdist]
        log(f"fetching {len(pins) - len(sdists)} wheels")
        for pin in sdists:
            log(f"{pin.name}=={pin.version} has no wheel for {request.target}, only the sdist "
                f"{pin.filename}: a pure wheel built from it is vendored if the project is pure "
                "(built once, cached by the sdist's sha256)")
        sources = UvSources(request.index_url, request.extra_index_urls, request.wheels_dirs,
                            uv_cache_under(cache))
        how = SdistBuild(sources, runner)
        pins = vendor_pins(pins, root / "wheels", cache=WheelCache.under(cache),
                           progress=progress, sdist_build=how)
    except (RuntimeError, OSError) as exc:
        raise BuildError(str(exc) + _glibc_hint(str(exc), request.target)) from None
    write_text(root / LOCK_NAME, _lock(pins, requirements, request, python_version).dumps())


def _glibc_hint(message: str, target: Target) -> str:
    """The pinned Gym version's closure (pyarrow >= 23) has no manylinux_2_17 x86_64 wheels:
    uv then pins the sdist of a compiled project, which cannot be cross-built."""
    missing = "no usable wheels" in message or "cannot be cross-built" in message
    if not missing or target.glibc_floor >= (2, 28):
        return ""
    floor = "{}_{}".format(*target.glibc_floor)
    return (f" (hint: resolved for glibc {floor}; if the cluster's glibc is newer, "
            f"pass e.g. --glibc 2_28)")


def _lock(pins: Sequence[PinnedWheel], requirements: list[tuple[str, str]],
          request: BuildRequest, python_version: str | None) -> Lock:
    """The vendored files, their sha256 and why each is there; no timestamps (reproducible)."""
    origins: dict[str, list[str]] = {}
    for line, origin in requirements:
        origins.setdefault(line, []).append(origin)
    by_name = {p.name: p for p in pins}
    return Lock(
        target=str(request.target),
        python_version=python_version or "{}.{}".format(*request.target.python),
        gym_version=request.gym_version,
        resolver=f"uv {uv_version()}",
        requirements=tuple(LockedRequirement(line, tuple(sorted(set(src))))
                           for line, src in origins.items()),
        wheels=tuple(LockedWheel(
            p.name, p.version, p.filename, url=p.url, sha256=p.sha256,
            requested_by=tuple(p.requested_by), why=tuple(_chain(p.name, by_name)),
            built_from=p.built_from,
        ) for p in pins),
    )


def _chain(name: str, by_name: dict[str, PinnedWheel]) -> list[str]:
    """Shortest ``requirement -> ... -> name`` path through ``requested_by``."""
    frontier: list[list[str]] = [[name]]
    seen = {name}
    while frontier:
        path = frontier.pop(0)
        pin = by_name.get(path[0])
        for parent in pin.requested_by if pin else ():
            if parent.startswith("requirement: "):
                return [parent.removeprefix("requirement: "), *path]
            if parent not in seen:
                seen.add(parent)
                frontier.append([parent, *path])
    return [name]


def _refuse_nesting(request: BuildRequest) -> None:
    """An output inside a source would be copied into itself on the next build."""
    out, data = request.out.resolve(), request.data_dir.resolve()
    for src in request.sources:
        if out.is_relative_to(src.resolve()) or data.is_relative_to(src.resolve()):
            msg = f"-o/--dataset-dir must not be inside the source {src}"
            raise BuildError(msg)
    if data.is_relative_to(out):
        msg = "--dataset-dir must not be inside the package: .jsonl cannot ship in it"
        raise BuildError(msg)


def _refuse_foreign(out: Path, data_dir: Path | None) -> None:
    """Never replace a directory envkit did not write (a typo in ``-o`` must not wipe $HOME)."""
    if out.exists() and (not out.is_dir() or (any(out.iterdir())
                                              and not (out / MANIFEST).is_file())):
        msg = f"{out} exists and is not an environment package; choose another -o"
        raise BuildError(msg)
    if data_dir is not None and data_dir.exists():
        others = [p for p in data_dir.rglob("*") if p.is_file() and p.suffix != ".jsonl"]
        if not data_dir.is_dir() or others:
            msg = (f"{data_dir} exists and holds more than .jsonl rows; "
                   "choose another --dataset-dir")
            raise BuildError(msg)


def _validate(out: Path, data_dir: Path | None, request: BuildRequest) -> Report:
    offline = request.fmt == "wheels-v1" and request.runtime_pins
    options = CheckOptions(request.target, request.gym_version, offline)
    has_rows = data_dir is not None and (data_dir / "training.jsonl").is_file()
    report = validate(ValidateRequest(package=out, dataset=data_dir if has_rows else None,
                                      options=options))
    return replace(report, target_source=request.target_source)

