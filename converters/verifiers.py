"""``envkit convert verifiers``: a verifiers / Prime hub environment -> adapter-wheels-v1 + rows.

Check what can be checked without running anything, resolve the closure for the *target*, load
the env in a venv built for the *host*, write rows and package, validate. Everything is staged
and renamed into place only when the package validates, so a failure leaves nothing behind.
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from envkit.converters.adapter_pkg import AdapterSpec, lock_data, package_texts
from envkit.converters.env_args import EnvArgsError, literal_secrets, resolved
from envkit.converters.env_source import EnvWheel, SourceError, build_source, local_wheel
from envkit.converters.hub import HubRef, parse_hub_id
from envkit.converters.rows import build_rows, split_rows, write_jsonl
from envkit.converters.staging import remove_stale, stage
from envkit.converters.verifiers_pin import CLASSIC_MAX, requires_conflict
from envkit.converters.vf_closure import fetch, hub_wheel, pin_sources, requirements, resolve_target
from envkit.converters.vf_load import load_rows
from envkit.converters.vf_request import GYM_VERIFIERS_VERSION, ConvertError, ConvertRequest
from envkit.model.closure import python_ok
from envkit.model.lock import LOCK_NAME, LockedWheel
from envkit.model.tree import sha256_file
from envkit.model.wheelfile import read_wheel
from envkit.supply import uvcmd
from envkit.supply.atomic import InstallError, install, write_files, write_text
from envkit.supply.provenance import package_record, write_provenance
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from envkit.converters.sandbox import LoadResult
    from envkit.model.wheelfile import WheelFile
    from envkit.validate.report import Report

__all__ = ["CLASSIC_MAX", "GYM_VERIFIERS_VERSION", "ConvertError", "ConvertRequest",
           "ConvertResult", "convert_verifiers"]

logger = logging.getLogger("envkit.convert")


@dataclass(frozen=True, slots=True)
class ConvertResult:
    package: Path
    dataset: Path
    training_rows: int
    validation_rows: int
    wheels: tuple[str, ...]
    dataset_source: str
    report: Report
    """The validation report of the (valid) package, as installed."""


def convert_verifiers(req: ConvertRequest) -> ConvertResult:
    """Convert; returns where things went.

    :raises ConvertError: any failure (an invalid package with ``report`` set).
    """
    hub = parse_hub_id(req.hub_id)
    _check_request(req)
    remove_stale(req.out_dir, req.dataset_dir)
    with ExitStack() as stack:
        pkg, data = stage(stack, req.out_dir), stage(stack, req.dataset_dir)
        work = stage(stack, req.out_dir.with_name(req.out_dir.name + "-work"))
        env_wheel = _env_wheel(req, hub, work / "src")
        name = env_wheel.name
        pins = fetch(resolve_target(req, env_wheel), pkg / "wheels")
        _check_closure(req, pins, pkg / "wheels", env_wheel, name)
        loaded = load_rows(req, hub, pins, pkg / "wheels", env_wheel, work)
        counts = _write_dataset(req, hub, loaded, data)
        _write_package(req, hub, pins, env_wheel, name, pkg)
        write_provenance(pkg, package_record(pkg, dataset=data, gym_version=req.gym_version))
        report = _validate_staged(req, pkg, data)
        try:
            install([(pkg, req.out_dir), (data, req.dataset_dir)], replace=req.force)
        except InstallError as exc:
            raise ConvertError(str(exc)) from None
    return ConvertResult(req.out_dir, req.dataset_dir, *counts,
                         tuple(p.filename for p in pins), loaded.source, report)


def _check_request(req: ConvertRequest) -> None:
    if Version(req.verifiers_version) >= CLASSIC_MAX:
        msg = (f"verifiers {req.verifiers_version} has only the v1 API (0.4 removed the "
               "classic API); Gym's verifiers_agent calls the classic API "
               "(vf.load_environment, Environment.run_group)")
        hint = (f"use --verifiers-version {GYM_VERIFIERS_VERSION} "
                f"(Gym {req.gym_version}'s verifiers_agent pin)")
        raise ConvertError(msg, hint)
    if sum(x is not None for x in (req.wheel, req.source)) > 1:
        raise ConvertError("give at most one of --wheel and --source")
    if req.wheel is None and req.source is None and not (req.hub_version or req.allow_latest):
        msg = "--hub-version is not set: the index's newest release would be taken"
        raise ConvertError(msg, "pin --hub-version X, or pass --allow-latest")
    out, data = req.out_dir.resolve(), req.dataset_dir.resolve()
    if out == data or out.is_relative_to(data) or data.is_relative_to(out):
        raise ConvertError("--out-dir and --dataset-dir must be separate, non-nested directories",
                           "the dataset must not live inside the package (EK200)")
    for path in (req.out_dir, req.dataset_dir):
        if path.exists() and not req.force:
            raise ConvertError(f"{str(path)!r} already exists", "remove it or pass --force")
    for path in (*req.constraints, *req.overrides):
        if not path.is_file():
            raise ConvertError(f"{str(path)!r} is not a file",
                               "--constraint/--override take a requirements file")
    _check_env_args(req)


def _check_env_args(req: ConvertRequest) -> None:
    """Secrets never reach the package as literals (it is uploaded as a FileSet)."""
    found = literal_secrets(req.env_args)
    if found and not req.allow_literal_secrets:
        msg = (f"--env-args has a literal value for {', '.join(map(repr, found))}, which "
               "looks like a secret and would be written into configs/verifiers_agent.yaml")
        raise ConvertError(msg, "pass it as '${oc.env:VAR}' (Gym resolves it at spin-up; "
                                "export VAR for the conversion), or --allow-literal-secrets")
    try:
        resolved(req.env_args)
    except EnvArgsError as exc:
        raise ConvertError(str(exc), exc.hint) from None


def _env_wheel(req: ConvertRequest, hub: HubRef, dest: Path) -> EnvWheel:
    """The env wheel (built, given, or downloaded alone from the hub index), checked before
    anything else is resolved."""
    try:
        if req.source is not None:
            logger.info("building a wheel from %s", req.source)
            wheel = local_wheel(build_source(req.source, dest / "build"), dest)
        elif req.wheel is not None:
            wheel = local_wheel(req.wheel, dest)
        else:
            logger.info("downloading %s from %s", hub.requirement(req.hub_version),
                        req.index_url or hub.index_url)
            wheel = hub_wheel(req, hub, dest)
    except SourceError as exc:
        raise ConvertError(str(exc), "--wheel takes a .whl file; --source a project with a "
                                     "pyproject.toml") from None
    if wheel.meta.name != hub.dist_name.replace("_", "-"):
        logger.warning("the wheel is %s, but hub id %s names %s", wheel.meta.name, hub.hub_id,
                       hub.dist_name)
    _check_wheel_meta(req, wheel.path)
    return wheel


def _check_wheel_meta(req: ConvertRequest, path: Path, who: str | None = None) -> None:
    """The env's own metadata: its verifiers pin and its Requires-Python."""
    meta = read_wheel(path, rel=path.name)
    conflict = requires_conflict(meta.requires_dist, req.verifiers_version)
    if conflict:
        raise ConvertError(conflict.message(who or path.name, req.gym_version), conflict.hint())
    _check_python(req, meta, who or path.name, "use a release of it that supports Python 3.13")


def _check_python(req: ConvertRequest, meta: WheelFile, who: str, hint: str) -> None:
    if not python_ok(meta, req.target):
        msg = (f"{who} declares Requires-Python {meta.requires_python!r}, which excludes the "
               f"training image's CPython {req.target.full_version}")
        raise ConvertError(msg, f"{hint} (EK406)")


def _check_closure(req: ConvertRequest, pins: Sequence[Any], wheels: Path, env_wheel: EnvWheel,
                   name: str) -> None:
    """Before any env code runs: the vendored env wheel is the one meant (no same-named
    project from another index), and every wheel admits the target's Python."""
    pin = next((p for p in pins if p.name == name), None)
    if pin is None:
        raise ConvertError(f"the resolved closure has no wheel for {name!r}")
    if pin.sha256 and pin.sha256 != sha256_file(env_wheel.path):
        msg = (f"an index served a different {pin.filename} than the wheel given "
               "(dependency confusion?)")
        raise ConvertError(msg, "rename the project or bump its version")
    _check_wheel_meta(req, wheels / pin.filename, f"{name} {pin.version}")
    for other in pins:
        meta = read_wheel(wheels / other.filename, rel=other.filename)
        if meta.error is None:
            _check_python(req, meta, other.filename,
                          f"pin another release of {other.name} with --override FILE")


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


def _write_package(req: ConvertRequest, hub: HubRef, pins: Sequence[Any], env_wheel: EnvWheel,
                   name: str, pkg: Path) -> None:
    spec = AdapterSpec(name=hub.name, hub_id=hub.hub_id, vf_env_id=hub.vf_env_id,
                       vf_env_args=req.env_args)
    write_files(pkg, {rel: text.encode() for rel, text in package_texts(spec).items()})
    sources = pin_sources(req, pins, name, env_wheel)
    locked = [LockedWheel(p.name, p.version, p.filename,
                          env_wheel.url if p.name == name and env_wheel.url else p.url,
                          p.sha256, tuple(p.requested_by), source=sources.get(p.name) or None)
              for p in pins]
    lock = lock_data(locked, str(req.target), requirements(req, env_wheel),
                     f"uv {uvcmd.uv_version()}")
    write_text(pkg / LOCK_NAME, lock.dumps())


def _validate_staged(req: ConvertRequest, pkg: Path, data: Path) -> Report:
    """Validate before anything is installed: an invalid package is refused with its report
    and leaves nothing behind."""
    options = CheckOptions(target=req.target, gym_version=req.gym_version, offline=req.offline)
    report = validate(ValidateRequest(package=pkg, dataset=data, options=options,
                                      package_as=req.out_dir, dataset_as=req.dataset_dir))
    if not report.valid:
        raise ConvertError("the converted package does not validate; nothing was written",
                           "see the diagnostics", report=report)
    return report
