"""``envkit convert verifiers``: a verifiers / Prime hub environment -> adapter-wheels-v1 + rows.

Steps, each in its own module: pick the env wheel (``env_source``), resolve and fetch the
closure of the env + ``verifiers==<Gym's pin>`` for the *target* (``envkit.resolve``), load the env
in a throwaway venv built for the *host* (``sandbox``), turn its dataset into rollout rows
and split them (``rows``), write manifest/configs/lock (``adapter_pkg``). Everything is
staged in temp dirs next to the outputs and renamed into place at the end, so a failure
leaves neither PKG nor DATA behind.
"""

from __future__ import annotations

import json
import logging
import shutil
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envkit import downloads, resolve, uvcmd
from envkit.atomic import make_temp_dir, stale_temp_dirs
from envkit.cache import cache_root
from envkit.closure import marker_roots
from envkit.converters.adapter_pkg import (
    LOCK_NAME,
    POLICY_MODEL_IMPL,
    AdapterSpec,
    LockedWheel,
    lock_data,
    package_texts,
)
from envkit.converters.env_source import (
    EnvWheel,
    SourceError,
    build_source,
    local_wheel,
    sha256_of,
    verifiers_conflict,
)
from envkit.converters.hub import HubRef, parse_hub_id
from envkit.converters.rows import build_rows, split_rows, write_jsonl
from envkit.converters.sandbox import (
    LoadError,
    LoadResult,
    SandboxError,
    cached_env,
    find_host_python,
    host_platform,
    install_into,
    run_loader,
)
from envkit.gym_data import DEFAULT_GYM_VERSION, gym_data, runtime_requirements
from envkit.sdists import SdistBuildError
from envkit.target import Target
from envkit.wheelcache import WheelCache

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CLASSIC_MAX",
    "GYM_VERIFIERS_VERSION",
    "ConvertError",
    "ConvertRequest",
    "ConvertResult",
    "convert_verifiers",
]

logger = logging.getLogger("envkit.convert")

GYM_VERIFIERS_VERSION = "0.3.1"
"""What nemo-gym 0.7.0's ``responses_api_agents/verifiers_agent/requirements.txt`` installs
(``verifiers @ git+...@v0.3.1``); ``tests/test_convert_verifiers.py`` checks it against the
installed Gym when one is present."""
CLASSIC_MAX = Version("0.4")
"""verifiers 0.4 is v1-only: no ``vf.load_environment``/``Environment.run_group``."""


class ConvertError(RuntimeError):
    """The conversion cannot proceed; ``hint`` says what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class ConvertRequest:
    hub_id: str
    out_dir: Path
    dataset_dir: Path
    hub_version: str | None = None
    allow_latest: bool = False
    target: Target = field(default_factory=lambda: Target(glibc=(2, 28)))
    index_url: str | None = None
    wheel: Path | None = None
    source: Path | None = None
    verifiers_version: str = GYM_VERIFIERS_VERSION
    gym_version: str = DEFAULT_GYM_VERSION
    env_args: dict[str, Any] = field(default_factory=dict)
    num_examples: int = -1
    validation_fraction: float = 0.0
    seed: int = 0
    timeout: float = 600.0
    force: bool = False
    host_python: str | None = None


@dataclass(frozen=True)
class ConvertResult:
    package: Path
    dataset: Path
    training_rows: int
    validation_rows: int
    wheels: tuple[str, ...]
    dataset_source: str


def convert_verifiers(req: ConvertRequest) -> ConvertResult:
    """Convert; returns where things went.

    :raises ConvertError: any failure, with a hint; no output is left behind.
    """
    hub = parse_hub_id(req.hub_id)
    _check_request(req)
    _remove_stale(req.out_dir, req.dataset_dir)
    with ExitStack() as stack:
        pkg = _stage(stack, req.out_dir)
        data = _stage(stack, req.dataset_dir)
        work = _stage(stack, req.out_dir.with_name(req.out_dir.name + "-work"))
        env_wheel = _env_wheel(req, hub, work / "src")
        pins = _resolve_target(req, hub, env_wheel)
        pins = _fetch(pins, pkg / "wheels")
        _check_env_wheel(req, hub, pins, env_wheel)
        loaded = _load_rows(req, hub, pins, pkg / "wheels", env_wheel, work)
        counts = _write_dataset(req, hub, loaded, data)
        _write_package(req, hub, pins, env_wheel, pkg)
        _install(pkg, req.out_dir, data, req.dataset_dir, force=req.force)
    return ConvertResult(req.out_dir, req.dataset_dir, *counts,
                         tuple(p.filename for p in pins), loaded.source)


def _fetch(pins: Sequence, dest: Path) -> list:
    """Exact files, sha256-checked, through the wheel cache ``envkit build`` uses too.

    Returns the vendored pins: an sdist-only pin becomes the pure wheel built from it."""
    try:
        return downloads.vendor_pins(pins, dest, cache=WheelCache(cache_root() / "wheels"))
    except downloads.FetchError as exc:
        raise ConvertError(str(exc), "check the network and the index, then rerun") from None
    except SdistBuildError as exc:
        raise ConvertError(str(exc), "pin a release that ships wheels for the target") from None


def _check_request(req: ConvertRequest) -> None:
    if Version(req.verifiers_version) >= CLASSIC_MAX:
        msg = (f"verifiers {req.verifiers_version} has only the v1 API; Gym's verifiers_agent "
               "calls the classic API (vf.load_environment, Environment.run_group)")
        hint = f"use --verifiers-version {GYM_VERIFIERS_VERSION} (Gym 0.7.0's pin)"
        raise ConvertError(msg, hint)
    if sum(x is not None for x in (req.wheel, req.source)) > 1:
        raise ConvertError("give at most one of --wheel and --source")
    if req.wheel is None and req.source is None and not (req.hub_version or req.allow_latest):
        msg = "--hub-version is not set: the index's newest release would be taken"
        raise ConvertError(msg, "pin --hub-version X (reproducible jobs), or pass --allow-latest")
    out, data = req.out_dir.resolve(), req.dataset_dir.resolve()
    if out == data or out.is_relative_to(data) or data.is_relative_to(out):
        raise ConvertError("--out-dir and --dataset-dir must be separate, non-nested directories",
                           "the dataset must not live inside the package (EK200)")
    for path in (req.out_dir, req.dataset_dir):
        if path.exists() and not req.force:
            raise ConvertError(f"{str(path)!r} already exists", "remove it or pass --force")


def _remove_stale(*finals: Path) -> None:
    """Temp dirs that killed conversions (or builds) left beside the outputs; done before
    staging, since ``envkit.atomic`` counts this process's own temp dirs as stale."""
    for parent in {f.resolve().parent for f in finals}:
        if parent.is_dir():
            for stale in stale_temp_dirs(parent):
                shutil.rmtree(stale, ignore_errors=True)


def _stage(stack: ExitStack, final: Path) -> Path:
    """A temp dir beside ``final`` (same filesystem, so the last step is a rename)."""
    final.resolve().parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(final.resolve())
    stack.callback(shutil.rmtree, tmp, ignore_errors=True)
    return tmp


def _env_wheel(req: ConvertRequest, hub: HubRef, dest: Path) -> EnvWheel | None:
    """The local env wheel for --wheel/--source (None for the hub path)."""
    try:
        if req.source is not None:
            logger.info("building a wheel from %s", req.source)
            wheel = local_wheel(build_source(req.source, dest / "build"), dest)
        elif req.wheel is not None:
            wheel = local_wheel(req.wheel, dest)
        else:
            return None
    except SourceError as exc:
        raise ConvertError(str(exc), "--wheel takes a .whl file; --source a project with a "
                                     "pyproject.toml") from None
    if wheel.meta.name != hub.dist_name.replace("_", "-"):
        logger.warning("the wheel is %s, but hub id %s names %s", wheel.meta.name, hub.hub_id,
                       hub.dist_name)
    _refuse_v1(req, wheel)
    return wheel


def _refuse_v1(req: ConvertRequest, wheel: EnvWheel) -> None:
    """Refuse before resolving: the wheel's own metadata says it needs verifiers >= 0.4."""
    why = verifiers_conflict(wheel.meta, req.verifiers_version)
    if why:
        msg = (f"{wheel.path.name} is written for the verifiers v1 API ({why}); Gym 0.7's "
               f"verifiers_agent runs verifiers {req.verifiers_version} and its classic API")
        raise ConvertError(msg, "use a release of the environment built on verifiers < 0.4, "
                                "or package it as wheels-v1 with a Gym server of your own")


_GYM_FLOORS = ("hydra-core>=1.1",)
"""nemo-gym requires ``hydra-core`` unpinned; hydra 1.x needs antlr4-python3-runtime 4.9.x,
which PyPI ships only as an sdist; a wheels-only resolution backtracked to hydra-core 0.11.3,
which imports ``pkg_resources`` (no setuptools in a 3.13 venv), and every Gym server died on
start. The resolver now builds pure sdists into wheels (``envkit.sdists``); the floor makes a
regression fail at resolution instead of at spin-up (tests/test_rollout_verifiers.py)."""


def _requirements(req: ConvertRequest, hub: HubRef, env_wheel: EnvWheel | None) -> list[str]:
    """The env, Gym's verifiers pin, and what Gym adds to the agent's venv (nemo-gym, ray,
    openai): resolving them together keeps the vendored closure installable into that venv
    (verifiers alone would pick openai 3.x and anthropic 2.x; nemo-gym 0.7.0 pins
    ``openai==2.44.0`` and ``anthropic<=0.109.2``)."""
    env_req = env_wheel.requirement if env_wheel else hub.requirement(req.hub_version)
    return [env_req, f"verifiers=={req.verifiers_version}",
            *runtime_requirements(req.gym_version), *_GYM_FLOORS, *_policy_model_requirements()]


def _policy_model_requirements() -> list[str]:
    """What Gym builds the built-in ``vllm_model`` venv from (``policy_model`` runs it):
    ``nemo-gym[dev]`` and setuptools for its editable install. Vendored, the only thing an
    offline spin-up still lacks is the harness's verifiers from GitHub (seed 001)."""
    rel = f"responses_api_models/{POLICY_MODEL_IMPL}"
    name, text = gym_data().builtin_server_installs[rel]
    roots, _egress = marker_roots(name, text, rel)
    return [str(root.requirement) for root in roots]


def _python_floor(target: Target) -> str | None:
    """nemo-gym declares ``Requires-Python >=3.13.14``; the image's 3.13 satisfies it, so the
    resolution uses that patch floor instead of plain 3.13 (= 3.13.0)."""
    for spec in SpecifierSet(gym_data().requires_python):
        if spec.operator == ">=" and tuple(map(int, spec.version.split(".")[:2])) == target.python:
            return spec.version
    return None


def _indexes(req: ConvertRequest, hub: HubRef, env_wheel: EnvWheel | None) -> list[str]:
    """Extra indexes (searched before PyPI): the owner's hub index, for the hub path."""
    return [] if env_wheel else [req.index_url or hub.index_url]


def _resolve_target(req: ConvertRequest, hub: HubRef, env_wheel: EnvWheel | None) -> list:
    requirements = _requirements(req, hub, env_wheel)
    logger.info("resolving %s for %s", ", ".join(requirements), req.target)
    try:
        pins = resolve.resolve_closure(
            requirements, req.target,
            find_links=[env_wheel.path.parent] if env_wheel else (),
            extra_index_urls=_indexes(req, hub, env_wheel),
            cache=resolve.ResolutionCache(cache_root() / "resolutions"),
            python_version=_python_floor(req.target),
        )
    except resolve.ResolveError as exc:
        hint = _resolve_hint(str(exc), req.target)
        raise ConvertError(str(exc), hint) from None
    if env_wheel is None:
        return pins
    # a cached resolution may name an earlier run's temp copy of the same (same-hash) wheel
    local = env_wheel.path.resolve().as_uri()
    return [replace(p, url=local) if p.name == env_wheel.meta.name else p for p in pins]


def _resolve_hint(message: str, target: Target) -> str:
    if "Failed to fetch" in message or "dns error" in message:
        return "an index could not be reached: check --index-url and the network"
    if "verifiers" in message and "unsatisfiable" in message:
        return "an environment that needs verifiers >= 0.4 uses the v1-only API"
    return (f"check that every dependency has a wheel for {target}; raise --glibc if your "
            "cluster's image has a newer glibc")


def _check_env_wheel(
    req: ConvertRequest, hub: HubRef, pins: Sequence, env_wheel: EnvWheel | None
) -> None:
    """The vendored env wheel is the local one (no same-named project from an index), and its
    verifiers requirement is classic."""
    name = _env_name(hub, env_wheel)
    pin = next((p for p in pins if p.name == name), None)
    if pin is None:
        raise ConvertError(f"the resolved closure has no wheel for {name!r}")
    host = urlsplit(pin.url).netloc
    if env_wheel is None and host != urlsplit(_indexes(req, hub, None)[0]).netloc:
        logger.warning("%s was served from %s, not by the hub index: check it is the env you "
                       "meant (a same-named project on another index?)", pin.filename, host)
    if env_wheel and pin.sha256 and pin.sha256 != sha256_of(env_wheel.path):
        msg = (f"an index served a different {pin.filename} than the wheel given "
               "(dependency confusion?)")
        raise ConvertError(msg, "rename the project or bump its version")


def _host_closure(req: ConvertRequest, hub: HubRef, pins: Sequence, wheels: Path,
                  env_wheel: EnvWheel | None, python: str, work: Path) -> tuple[list, Path]:
    """Pins and a folder of wheels for the interpreter that loads the env.

    When the host is the target's platform (same machine, CPython 3.13) that is the vendored
    closure itself, so the load also proves ``wheels/`` installs. Otherwise the same
    requirements are resolved for the host (glibc 2.28 floor) and fetched separately.
    """
    machine, version = host_platform(python)
    if machine == req.target.arch and version == req.target.python:
        return list(pins), wheels
    host = Target(arch=machine, python=version, glibc=(2, 28))
    logger.info("the host (%s) is not the target: resolving the host closure too", host)
    host_pins = _resolve_target(replace(req, target=host), hub, env_wheel)
    dest = work / "host-wheels"
    return _fetch(host_pins, dest), dest


def _load_rows(req: ConvertRequest, hub: HubRef, pins: Sequence, wheels: Path,
               env_wheel: EnvWheel | None, work: Path) -> LoadResult:
    """Load the env in a subprocess of a venv built from the host closure.

    The dependencies go into a venv cached by their exact hashes (shared by every env with
    the same closure); the env wheel itself is installed per run into a directory the
    loader puts first on ``sys.path``.
    """
    python = req.host_python or find_host_python()
    host_pins, folder = _host_closure(req, hub, pins, wheels, env_wheel, python, work)
    name = _env_name(hub, env_wheel)
    # nemo-gym is the agent's runtime, never imported by a load, and its Requires-Python
    # floor (3.13.14) is above what a local 3.13 may be
    deps = [(p.sha256 or p.filename, folder / p.filename) for p in host_pins
            if p.name not in (name, "nemo-gym")]
    env_file = next(folder / p.filename for p in host_pins if p.name == name)
    logger.info("installing the environment into a throwaway venv (%s)", python)
    uv = uvcmd.uv_bin()
    try:
        venv_python = cached_env(uv, cache_root() / "convert-venvs", python, deps)
        site = install_into(uv, venv_python, env_file, work / "run" / "site")
    except SandboxError as exc:
        raise ConvertError(str(exc), "the host needs the same closure the target gets") from None
    return _run(req, hub, venv_python, work, site)


def _env_name(hub: HubRef, env_wheel: EnvWheel | None) -> str:
    return env_wheel.meta.name if env_wheel else hub.dist_name.replace("_", "-")


def _run(req: ConvertRequest, hub: HubRef, venv_python: Path, work: Path,
         site: Path) -> LoadResult:
    logger.info("loading %s with load_environment(**%s)", hub.vf_env_id, req.env_args)
    try:
        return run_loader(venv_python, hub.module, hub.vf_env_id, req.env_args, work / "run",
                          timeout=req.timeout, num_examples=req.num_examples, path=[site])
    except LoadError as exc:
        if exc.log.strip():
            logger.error("output of the environment's load:\n%s", exc.log[-3000:])
        raise ConvertError(f"loading {hub.vf_env_id!r} failed ({exc.kind}): {exc}",
                           _LOAD_HINTS.get(exc.kind, "see the log above")) from None


_LOAD_HINTS = {
    "v1": "the module exports a verifiers v1 Taskset; Gym's verifiers_agent needs the classic "
          "load_environment(**kwargs) API (verifiers < 0.4)",
    "none": "the module must define load_environment(**kwargs) (verifiers classic API)",
    "timeout": "raise --timeout if loading legitimately takes longer",
    "escape": "an environment may write only under its HOME/TMPDIR during conversion",
    "import": "the wheel's top-level module must be named after the hub id (dashes -> underscores)",
    "load": "check --env-args; the traceback is in the log",
}


def _write_dataset(
    req: ConvertRequest, hub: HubRef, loaded: LoadResult, data: Path
) -> tuple[int, int]:
    rows = build_rows(loaded.examples, hub.vf_env_id)
    if not rows:
        raise ConvertError(f"{hub.vf_env_id!r} produced no dataset rows ({loaded.source})")
    try:
        split = split_rows(rows, req.validation_fraction, req.seed)
    except ValueError as exc:
        raise ConvertError(str(exc)) from None
    write_jsonl(data / "training.jsonl", split.training)
    if split.validation:
        write_jsonl(data / "validation.jsonl", split.validation)
    return len(split.training), len(split.validation)


def _write_package(
    req: ConvertRequest, hub: HubRef, pins: Sequence, env_wheel: EnvWheel | None, pkg: Path
) -> None:
    spec = AdapterSpec(name=hub.name, hub_id=hub.hub_id, vf_env_id=hub.vf_env_id,
                       vf_env_args=req.env_args)
    for rel, text in package_texts(spec).items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text, "utf-8")
    locked = [LockedWheel(p.name, p.version, p.filename, p.url, p.sha256,
                          tuple(p.requested_by)) for p in pins]
    lock = lock_data(locked, str(req.target), _requirements(req, hub, env_wheel),
                     f"uv {uvcmd.uv_version()}")
    (pkg / LOCK_NAME).write_text(json.dumps(lock, indent=2) + "\n", "utf-8")


def _install(pkg: Path, out: Path, data: Path, dataset_dir: Path, *, force: bool) -> None:
    """Rename both staged dirs into place; if the second rename fails, undo the first."""
    backups: list[tuple[Path, Path]] = []
    done: list[Path] = []
    try:
        for staged, final in ((pkg, out), (data, dataset_dir)):
            if final.exists() and force:
                backup = final.with_name(f".{final.name}.envkit-old")
                final.rename(backup)
                backups.append((backup, final))
            staged.rename(final)
            done.append(final)
    except OSError as exc:
        for final in done:
            shutil.rmtree(final, ignore_errors=True)
        for backup, final in backups:
            backup.rename(final)
        raise ConvertError(f"could not move the output into place: {exc}") from None
    for backup, _ in backups:
        shutil.rmtree(backup, ignore_errors=True)
