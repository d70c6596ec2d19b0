"""The EK400–EK409 checks: each wheel's tags, RECORD, Requires-Python and install-time code
against the target, projects vendored twice, and the closure of what the cluster installs
through ``wheels/``.

Everything is read from the ``Package`` model: filename tags, METADATA and the RECORD
findings ``envkit.model.wheelfile`` recorded. No wheel is installed or imported.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envkit.model.closure import (
    RUNTIME_ORIGIN,
    Egress,
    Root,
    marker_roots,
    parse_requirement,
    python_ok,
    runtime_roots,
    usable,
    walk,
)
from envkit.model.diagnostics import Severity
from envkit.model.gym_data import gym_data
from envkit.model.package import INSTALL_MARKERS, WHEEL_FORMATS
from envkit.validators.gym.model import view_of
from envkit.validators.wheels.rules import (
    EK400,
    EK401,
    EK402,
    EK403,
    EK404,
    EK405,
    EK406,
    EK407,
    EK408,
    EK409,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from envkit.model.closure import Closure, Missing
    from envkit.model.diagnostics import Diagnostic
    from envkit.model.package import Package
    from envkit.model.target import Target
    from envkit.model.wheelfile import WheelFile
    from envkit.validators._base import Inputs

__all__ = ["CHECKS", "closure_roots"]

WHEELS_DIR = "wheels/"
HARNESS_EGRESS = "verifiers @ git+https://github.com/PrimeIntellect-ai/verifiers.git@v0.3.1"
"""From the pinned Gym version's ``responses_api_agents/verifiers_agent/requirements.txt``: the
adapter harness installs verifiers from GitHub, so adapter packages always need egress."""


def _wheel_package(inputs: Inputs) -> Package | None:
    """The package when it ships a wheelhouse (native-v1 ships none; EK206 covers a stray one)."""
    pkg = inputs.package
    return pkg if pkg is not None and pkg.format in WHEEL_FORMATS else None


def check_wheel_files(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK400, EK401, EK406, EK407, EK409: one wheel at a time.

    A wheel for another platform is reported only when its project has no wheel the target
    can use: a package may carry builds for both cluster architectures, and the installer
    skips the ones that do not match.
    """
    pkg = _wheel_package(inputs)
    if pkg is None:
        return
    target = inputs.options.target
    covered = {w.name for w in pkg.wheels if usable(w, target)}
    for wheel in pkg.wheels:
        if wheel.error is not None:
            yield EK400.at(wheel.path, f"`{wheel.filename}`: {wheel.error}")
            continue
        yield from (EK407.at(wheel.path, f"`{wheel.filename}`: {i}") for i in wheel.record_issues)
        yield from (EK409.at(wheel.path, f"`{wheel.filename}` installs `{pth}`, which runs "
                             "code at every interpreter start") for pth in wheel.startup_code)
        if wheel.name in covered:
            continue
        if not target.accepts(wheel.tags):
            yield EK401.at(wheel.path, _tag_message(wheel, target))
        elif not python_ok(wheel, target):
            msg = (f"`{wheel.filename}` declares Requires-Python `{wheel.requires_python}`, "
                   f"which excludes the target CPython {target.full_version}")
            yield EK406.at(wheel.path, msg)


def _tag_message(wheel: WheelFile, target: Target) -> str:
    """What the wheel is built for and what the target is, in words, then the likely reason
    (the installer's own "has no wheels with a matching platform tag" says neither)."""
    major, minor = target.glibc_floor
    target_words = (f"CPython {target.python[0]}.{target.python[1]} on {target.arch} Linux with "
                    f"glibc {major}.{minor} ({target})")
    return (f"`{wheel.filename}` is {_built_for(wheel)}, but the target is {target_words}: "
            f"{_why_not(wheel, target)}")


_PLATFORM_WORDS = (
    (r"manylinux_(\d+)_(\d+)_(\w+)", "{2} Linux with glibc >= {0}.{1}"),
    (r"manylinux(2014)_(\w+)", "{1} Linux with glibc >= 2.17"),
    (r"manylinux(2010)_(\w+)", "{1} Linux with glibc >= 2.12"),
    (r"manylinux(1)_(\w+)", "{1} Linux with glibc >= 2.5"),
    (r"musllinux_(\d+)_(\d+)_(\w+)", "{2} musl Linux (musl >= {0}.{1})"),
    (r"linux_(\w+)", "{0} Linux (a local build, glibc unknown)"),
    (r"macosx_\d+_\d+_(\w+)", "{0} macOS"),
    (r"win_?(\w*)", "Windows {0}"),
)
"""Platform tags (PEP 600/656) in words, so EK401 sets them beside the target's in the same
words. Patterns, not compiled ones (``re`` caches them): only a wheel the target cannot
install needs them."""


def _built_for(wheel: WheelFile) -> str:
    """``a CPython 3.12 wheel for x86_64 Linux with glibc >= 2.17`` from the filename tags."""
    tags = sorted(wheel.tags, key=str)  # a frozenset: its order changes with the hash seed
    pythons = dict.fromkeys(_interpreter_words(t.interpreter, t.abi) for t in tags)
    platforms = dict.fromkeys(_platform_words(t.platform) for t in tags)
    return f"a {' / '.join(pythons)} wheel for {' or '.join(platforms)}"


def _interpreter_words(interpreter: str, abi: str) -> str:
    match = re.fullmatch(r"(cp|pp|py)(\d)(\d*)", interpreter)
    if match is None:
        return f"`{interpreter}`"
    kind, major, minor = match.groups()
    name = {"cp": "CPython", "pp": "PyPy", "py": "Python"}[kind]
    version = f"{major}.{minor}" if minor else major
    if abi == "abi3":
        return f"{name} >= {version} (abi3)"
    return f"pure {name} {version}" if kind == "py" else f"{name} {version}"


def _platform_words(platform: str) -> str:
    if platform == "any":
        return "any platform"
    for pattern, words in _PLATFORM_WORDS:
        match = re.fullmatch(pattern, platform)
        if match is not None:
            return words.format(*match.groups())
    return f"`{platform}`"


def _why_not(wheel: WheelFile, target: Target) -> str:
    """The most likely reason, for the message: arch, glibc, musl, local build or Python."""
    platforms = {t.platform for t in wheel.tags}
    if any(p.startswith("musllinux") for p in platforms):
        return "musllinux wheels do not load on the glibc training image"
    if any(p.startswith("linux_") for p in platforms):
        return "`linux_*` is a local, unportable build tag (PEP 600); vendor a manylinux wheel"
    if platforms != {"any"} and not any(p.endswith(target.arch) for p in platforms):
        return "built for another architecture"
    if platforms & set(target.platforms) or "any" in platforms:
        return f"built for another interpreter/ABI than CPython {target.full_version}"
    major, minor = target.glibc_floor
    return f"needs a newer glibc than the target floor {major}.{minor}"


def check_duplicates(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK402: one project at two versions."""
    pkg = _wheel_package(inputs)
    by_name: dict[str, list[WheelFile]] = defaultdict(list)
    for wheel in pkg.wheels if pkg else ():
        if wheel.name is not None and wheel.error is None:
            by_name[wheel.name].append(wheel)
    for name, wheels in sorted(by_name.items()):
        versions = sorted({w.version for w in wheels if w.version is not None})
        if len(versions) > 1:
            listed = ", ".join(str(v) for v in versions)
            msg = f"`{name}` is vendored at {len(versions)} versions ({listed})"
            yield EK402.at(sorted(w.path for w in wheels)[0], msg)


def closure_roots(pkg: Package, inputs: Inputs) -> tuple[list[Root], list[Egress]]:
    """What the cluster installs from: server requirements, adapter env wheels, runtime pins
    and the built-in servers the configs run.

    Without ``--offline`` the runtime pins and the built-ins' requirements count only for
    projects ``wheels/`` vendors (the first install has an index for the rest).
    """
    roots: list[Root] = []
    egress: list[Egress] = []
    for server in pkg.servers:
        name = next((m for m in INSTALL_MARKERS if m in server.texts), None)
        if name is not None:
            found, needs = marker_roots(name, server.texts[name], f"{server.path}/{name}",
                                        server.texts)
            roots += found
            egress += needs
    if pkg.format == "adapter-wheels-v1":
        roots += _adapter_roots(pkg)
        if inputs.options.offline:
            egress.append(Egress(HARNESS_EGRESS, "nemo-environment.yaml", None))
    vendored = {w.name for w in pkg.wheels if w.name is not None}
    runtime = runtime_roots(inputs.options.gym_version, gym_data().requires_dist, WHEELS_DIR)
    builtin, needs = _builtin_server_roots(pkg)  # with an index: only what wheels/ offers
    roots += [r for r in (*runtime, *builtin)
              if inputs.options.offline or canonicalize_name(r.requirement.name) in vendored]
    egress += needs if inputs.options.offline else []
    return roots, egress


def _builtin_server_roots(pkg: Package) -> tuple[list[Root], list[Egress]]:
    """Roots of the built-in servers the configs run but the package does not ship.

    Gym builds a venv for every server instance, from the package's ``<type>/<impl>/`` when it
    has an install marker, else from its own install root (``vllm_model`` for the policy, in
    most packages): ``nemo-gym[dev]`` plus setuptools to build it. Offline, ``wheels/`` must
    cover that too. The adapter's harness is left to ``_adapter_roots`` (staged offline).
    """
    view = view_of(pkg)
    if view is None:
        return [], []
    # skipped: what the package ships, the adapter's harness, and servers already counted
    seen = {s.path for s in pkg.servers if s.files.intersection(INSTALL_MARKERS)}
    adapter = pkg.manifest_data.get("adapter")
    if pkg.format == "adapter-wheels-v1" and isinstance(adapter, dict):
        seen.add(f"{adapter.get('agent_type')}/{adapter.get('agent')}")
    installs = gym_data().builtin_server_installs
    roots: list[Root] = []
    egress: list[Egress] = []
    for instance in view.servers():
        rel = f"{instance.shape.server_type}/{instance.shape.impl}"
        if rel in seen or rel not in installs:
            continue
        seen.add(rel)
        name, text = installs[rel]
        found, needs = marker_roots(name, text, f"{rel}/{name}")
        path, line = instance.locate()
        origin = f"built-in {rel} (run by `{instance.name}`, {path})"
        roots += [Root(r.requirement, origin, path, line) for r in found]
        egress += [Egress(f"{e.text} (built-in {rel})", path, line) for e in needs]
    return roots, egress


def _adapter_roots(pkg: Package) -> list[Root]:
    """The env wheel (``metadata.vf_env_id``, or any wheel that requires verifiers) and the
    verifiers the harness imports."""
    meta = pkg.manifest_data.get("metadata")
    env_id = meta.get("vf_env_id") if isinstance(meta, dict) else None
    env_name = canonicalize_name(env_id) if isinstance(env_id, str) else None
    roots: list[Root] = []
    for wheel in pkg.wheels:
        if wheel.name is None or wheel.version is None:
            continue
        if wheel.name == env_name or "verifiers" in _required_names(wheel):
            req = Requirement(f"{wheel.name}=={wheel.version}")
            roots.append(Root(req, "adapter environment wheel", wheel.path))
        elif wheel.name == "verifiers":
            roots.append(Root(Requirement("verifiers"), "verifiers_agent harness", wheel.path))
    return roots


def check_closure(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK403, EK404, EK405, EK408: walk the roots through Requires-Dist on the target."""
    pkg = _wheel_package(inputs)
    if pkg is None:
        return
    roots, egress = closure_roots(pkg, inputs)
    closure = walk(pkg.wheels, roots, inputs.options.target)
    yield from _pin_mismatches(pkg, inputs)
    offline = inputs.options.offline
    yield from (_egress(item, offline) for item in egress)
    yield from filter(None, (_missing(miss, offline) for miss in closure.missing))
    yield from _dead_weight(pkg, closure)


def _pin_mismatches(pkg: Package, inputs: Inputs) -> Iterator[Diagnostic]:
    """EK404/EK405 for vendored runtime projects off the image's pins."""
    pins = {canonicalize_name(r.requirement.name): r.requirement for r in
            runtime_roots(inputs.options.gym_version, gym_data().requires_dist, WHEELS_DIR)}
    for wheel in pkg.wheels:
        pin = pins.get(wheel.name) if wheel.name else None
        if pin is None or wheel.version is None or wheel.error is not None:
            continue
        if not pin.specifier.contains(wheel.version, prereleases=True):
            rule = EK404 if wheel.name == "nemo-gym" else EK405
            msg = (f"`{wheel.filename}` vendors {wheel.name} {wheel.version}, but the image "
                   f"installs `{pin}` ({RUNTIME_ORIGIN})")
            yield rule.at(wheel.path, msg)


_HARNESS_HINT = (
    "No rebuild can satisfy this: the training image installs the `verifiers_agent` harness "
    "itself, from GitHub, so an adapter-wheels-v1 package never passes `--offline` (by "
    "design). Train it where the cluster has egress and validate without `--offline`; for a "
    "cluster without egress, build a wheels-v1 package that ships its own agent."
)


def _egress(item: Egress, offline: bool) -> Diagnostic:
    if offline and item.text == HARNESS_EGRESS:
        msg = (f"adapter-wheels-v1 always needs egress: the image's `verifiers_agent` harness "
               f"installs `{item.text}` from the network at spin-up, and the cluster has none")
        return EK403.at(item.path, msg, line=item.line, hint=_HARNESS_HINT)
    if offline:
        msg = f"`{item.text}` is fetched from the network, and the cluster has no egress"
        return EK403.at(item.path, msg, line=item.line)
    msg = f"`{item.text}` is fetched from the network at spin-up (needs egress)"
    return EK403.at(item.path, msg, line=item.line, severity=Severity.WARNING)


def _missing(miss: Missing, offline: bool) -> Diagnostic | None:
    """EK404/EK405 for the runtime projects (offline only), EK403 for everything else."""
    runtime = {"nemo-gym": EK404, "ray": EK405, "openai": EK405}.get(miss.name)
    if runtime is not None:
        if not offline or miss.vendored:  # vendored off-pin: _pin_mismatches said it
            return None
        msg = f"`{miss.requirement}` is not in wheels/ and the cluster has no egress: {miss.text}"
        return runtime.at(miss.path, msg, line=miss.line)
    have = f"wheels/ has only {', '.join(miss.vendored)}" if miss.vendored else "not in wheels/"
    if offline:
        msg = f"`{miss.requirement}` is not satisfied ({have}): {miss.text}"
        return EK403.at(miss.path, msg, line=miss.line)
    msg = f"`{miss.requirement}` needs egress ({have}): {miss.text}"
    return EK403.at(miss.path, msg, line=miss.line, severity=Severity.WARNING)


def _dead_weight(pkg: Package, closure: Closure) -> Iterator[Diagnostic]:
    """EK408, naming the cause when the only wheels that require this one are wheels the
    target cannot install (their EK401/EK406): then it is a follow-on, not dead weight."""
    blocked = [w for w in pkg.wheels if w.name in closure.blocked and w.error is None]
    for wheel in pkg.wheels:
        if wheel.name is None or wheel.error is not None or wheel.name in closure.reached:
            continue
        msg = f"`{wheel.filename}`: nothing installed on the target requires {wheel.name}"
        by = sorted(w.filename for w in blocked if wheel.name in _required_names(w))
        if by:
            also = f" and {len(by) - 1} more" if len(by) > 1 else ""
            msg += (f"; only `{by[0]}`{also} does, which the target cannot install (see its "
                    "EK401/EK406): fix that first")
        yield EK408.at(wheel.path, msg)


def _required_names(wheel: WheelFile) -> set[str]:
    return {canonicalize_name(r.name) for r in map(parse_requirement, wheel.requires_dist)
            if r is not None}


CHECKS = (check_wheel_files, check_duplicates, check_closure)
