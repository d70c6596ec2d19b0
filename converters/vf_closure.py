"""The wheel closure a converted package vendors: what is resolved, with which uv bounds,
from where, and how a resolver's refusal is explained.

Candidates are bounded by the harness's release date (uv ``--exclude-newer``), so the closure
is one in which the harness's verifiers works.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envkit.converters.adapter_pkg import POLICY_MODEL_IMPL
from envkit.converters.env_source import builder_error, local_wheel
from envkit.converters.verifiers_pin import conflict_in_uv_message
from envkit.converters.vf_request import (
    GYM_VERIFIERS_VERSION,
    VERIFIERS_ONLY_DEPS,
    VERIFIERS_RELEASE_DATE,
    ConvertError,
)
from envkit.model.closure import marker_roots
from envkit.model.gym_data import gym_data, runtime_requirements
from envkit.supply import downloads, resolve
from envkit.supply.cache import cache_root
from envkit.supply.sdists import SdistBuildError
from envkit.supply.wheelcache import WheelCache

if TYPE_CHECKING:
    from collections.abc import Sequence

    from envkit.converters.env_source import EnvWheel
    from envkit.converters.hub import HubRef
    from envkit.converters.vf_request import ConvertRequest
    from envkit.model.target import Target

__all__ = ["fetch", "hub_wheel", "pin_sources", "requirements", "resolve_target"]

logger = logging.getLogger("envkit.convert")

_GYM_FLOORS = ("hydra-core>=1.1",)
"""nemo-gym requires ``hydra-core`` unpinned, and hydra 1.x needs an sdist-only antlr4: a
wheels-only resolution backtracked to hydra-core 0.11.3, which imports ``pkg_resources`` (no
setuptools in a 3.13 venv), and every Gym server died on start. The floor makes such a
regression fail at resolution instead of at spin-up."""


def requirements(req: ConvertRequest, env_wheel: EnvWheel) -> list[str]:
    """The env, Gym's verifiers pin, and what Gym adds to the agent's venv (nemo-gym, ray,
    openai): resolved together so the closure installs into that venv (verifiers alone would
    pick an openai and anthropic nemo-gym's pins exclude)."""
    return [env_wheel.requirement, f"verifiers=={req.verifiers_version}",
            *runtime_requirements(req.gym_version), *_GYM_FLOORS, *_policy_model_requirements()]


def _policy_model_requirements() -> list[str]:
    """What Gym builds the built-in ``vllm_model`` venv (``policy_model``) from: vendored, an
    offline spin-up lacks only the harness's verifiers from GitHub."""
    rel = f"responses_api_models/{POLICY_MODEL_IMPL}"
    name, text = gym_data().builtin_server_installs[rel]
    roots, _egress = marker_roots(name, text, rel)
    return [str(root.requirement) for root in roots]


def hub_wheel(req: ConvertRequest, hub: HubRef, dest: Path) -> EnvWheel:
    """Download the env wheel alone (``--no-deps``) before anything else is resolved: its
    metadata is checked first, and the full resolution finds it as a local file (uv's
    ``--offline`` pass cannot read a wheel's metadata back from its cache when the index's
    link carries no ``#sha256=``, which PEP 503 makes optional).
    """
    index = req.index_url or hub.index_url
    args = ["--no-deps", *_uv_args(req, hub.dist_name.replace("_", "-"))]
    try:
        (pin,) = resolve.resolve_closure(
            [hub.requirement(req.hub_version)], req.target, extra_index_urls=[index],
            cache=None, python_version=gym_data().python_floor(req.target.python),
            extra_args=args)
    except resolve.ResolveError as exc:
        raise _resolve_error(str(exc), req) from None
    except ValueError:
        raise ConvertError(f"{hub.requirement(req.hub_version)!r} resolved to more than one "
                           "file") from None
    (vendored,) = fetch([pin], dest)
    return local_wheel(dest / vendored.filename, dest, index=index, url=pin.url)


def _runtime_names(gym_version: str) -> list[str]:
    """What Gym pins in every server venv: the training image decides those, not a date."""
    return sorted({canonicalize_name(Requirement(r).name)
                   for r in runtime_requirements(gym_version)})


def _uv_args(req: ConvertRequest, env_name: str) -> list[str]:
    """Date bounds (not for the env itself: a hub index or a plain directory serves no upload
    times; not for Gym's runtime pins; not for what the user pins in a file), constraints and
    overrides."""
    args: list[str] = []
    if req.exclude_newer:
        args += ["--exclude-newer", req.exclude_newer]
        args += [a for name in (env_name, *_runtime_names(req.gym_version))
                 for a in ("--exclude-newer-package", f"{name}=false")]
        if req.verifiers_version == GYM_VERIFIERS_VERSION:
            pinned = set(_named_in([*req.constraints, *req.overrides]))
            args += [a for name in VERIFIERS_ONLY_DEPS if name not in pinned
                     for a in ("--exclude-newer-package", f"{name}={VERIFIERS_RELEASE_DATE}")]
    for path in req.constraints:
        args += ["--constraints", str(Path(path).resolve())]
    for path in req.overrides:
        args += ["--overrides", str(Path(path).resolve())]
    return args

def resolve_target(req: ConvertRequest, env_wheel: EnvWheel) -> list[Any]:
    """Pins for ``req.target``, the env wheel found locally and on the index it came from.

    :raises ConvertError: uv refused; the message names the real cause.
    """
    reqs = requirements(req, env_wheel)
    logger.info("resolving %s for %s", ", ".join(reqs), req.target)
    try:
        pins = resolve.resolve_closure(
            reqs, req.target,
            find_links=[env_wheel.path.parent, *req.wheels_dirs],
            extra_index_urls=[env_wheel.index] if env_wheel.index else [],
            cache=resolve.ResolutionCache(cache_root() / "resolutions"),
            python_version=gym_data().python_floor(req.target.python),
            extra_args=_uv_args(req, env_wheel.name),
        )
    except resolve.ResolveError as exc:
        raise _resolve_error(str(exc), req) from None
    # a cached resolution may name an earlier run's temp copy of the same (same-hash) wheel
    local = env_wheel.path.resolve().as_uri()
    return [replace(p, url=local) if p.name == env_wheel.name else p for p in pins]


def _resolve_error(message: str, req: ConvertRequest) -> ConvertError:
    found = conflict_in_uv_message(message, req.verifiers_version)
    if found:
        who, conflict = found
        return ConvertError(conflict.message(who, req.gym_version), conflict.hint())
    return ConvertError(message, resolve_hint(message, req.target))


def resolve_hint(message: str, target: Target) -> str:
    if "Failed to fetch" in message or "dns error" in message:
        return "an index could not be reached: check --index-url and the network"
    if "verifiers" in message and "unsatisfiable" in message:
        return ("an environment that needs verifiers >= 0.4 has no conversion route yet: "
                "verifiers 0.4 removed the classic API Gym's verifiers_agent runs; to train on "
                "it, write a Gym resources server for it and package that as wheels-v1")
    if "unsatisfiable" in message:
        return ("pin the conflicting dependency with --override FILE (a requirements file, "
                "e.g. 'name==1.2.3'), or bound it with --constraint FILE")
    return (f"check that every dependency has a wheel for {target}; raise --glibc if your "
            "cluster's image has a newer glibc, or add a prebuilt wheel with --wheels-dir DIR")


def fetch(pins: Sequence[Any], dest: Path) -> list[Any]:
    """Exact files, sha256-checked, through ``envkit build``'s wheel cache; an sdist-only pin
    comes back as the pure wheel built from it."""
    try:
        return downloads.vendor_pins(pins, dest, cache=WheelCache(cache_root() / "wheels"))
    except downloads.FetchError as exc:
        raise ConvertError(str(exc), "check the network and the index, then rerun") from None
    except SdistBuildError as exc:
        output = getattr(exc, "output", "")
        first = str(exc).split(": ", 1)[0]
        raise ConvertError(f"{first}: building its sdist failed:\n{builder_error(output)}"
                           if output else str(exc),
                           "pin a release of that dependency that ships wheels with --override "
                           "FILE (e.g. 'name==1.2.3'), or add a wheel built for the target "
                           "with --wheels-dir DIR") from None


def _named_in(files: Sequence[Path]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in files:
        for line in Path(path).read_text("utf-8").splitlines():
            try:
                out[canonicalize_name(Requirement(line.split("#")[0].strip()).name)] = \
                    f"{Path(path).name}: {line.strip()}"
            except InvalidRequirement:
                continue
    return out


def pin_sources(req: ConvertRequest, pins: Sequence[Any], env_name: str,
                env_wheel: EnvWheel | None) -> dict[str, str]:
    """Where each pin came from, by name, for ``wheels.lock``."""
    dirs = {str(Path(d).resolve()): str(d) for d in req.wheels_dirs}
    overrides, constraints = _named_in(req.overrides), _named_in(req.constraints)
    out: dict[str, str] = {}
    for pin in pins:
        url = urlsplit(pin.url)
        if pin.name == env_name and env_wheel and env_wheel.index:
            where = f"index {urlsplit(env_wheel.index).netloc} (the environment)"
        elif pin.name == env_name and url.scheme == "file":
            where = "the environment wheel (--wheel/--source)"
        elif url.scheme == "file":
            folder = str(Path(unquote(url.path)).parent)
            where = f"--wheels-dir {dirs.get(folder, folder)}"
        else:
            where = f"index {url.netloc}"
        if pin.name in overrides:
            where += f"; --override {overrides[pin.name]}"
        elif pin.name in constraints:
            where += f"; --constraint {constraints[pin.name]}"
        out[pin.name] = where
    return out
