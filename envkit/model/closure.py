"""Does ``wheels/`` cover what the cluster installs? Pure functions, no network, no disk.

The walk mirrors what the image does at job start ("How dependencies are installed"): per
server, ``nemo-gym==<image version>`` plus the server's ``requirements.txt`` minus every line
containing ``../..`` (Gym's setup greps them out), plus ``ray[default]`` and ``openai`` at Gym's
pins. Markers and extras are evaluated for the *target*, and each requirement keeps the chain
that pulled it in (``openai==2.44.0 <- nemo-gym==0.7.0 <- runtime pin``).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from packaging.markers import Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion

from envkit.model.reqfiles import (  # re-exported: the closure's callers read roots from here
    MAX_REQUIREMENT_CHARS,
    Egress,
    Root,
    marker_roots,
    parse_requirement,
    pyproject_roots,
    requirements_txt_roots,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from packaging.version import Version

    from envkit.model.target import Target
    from envkit.model.wheelfile import WheelFile

__all__ = [
    "RUNTIME_ORIGIN",
    "SEED_ORIGIN",
    "Closure",
    "Egress",
    "Missing",
    "Root",
    "marker_roots",
    "parse_requirement",
    "pyproject_roots",
    "python_ok",
    "requirements_txt_roots",
    "runtime_roots",
    "usable",
    "walk",
]

RUNTIME_ORIGIN = "runtime pin"
SEED_ORIGIN = "venv seed (Gym runs `uv venv --seed`)"
_LAST_EXTRA = re.compile(r"(?:;|\band)\s*extra\s*==\s*[\"']([^\"']+)[\"']\s*$")
_PARENS = re.compile(r"\([^()]*\)")


@dataclass(frozen=True, slots=True)
class Missing:
    """A requirement no usable wheel in ``wheels/`` satisfies."""

    requirement: Requirement
    chain: tuple[str, ...]
    path: str
    line: int | None
    vendored: tuple[str, ...] = ()
    """Versions of the project that ``wheels/`` does carry (none of them fits)."""

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.requirement.name)

    @property
    def text(self) -> str:
        """``aiohttp>=3.7 <- ray[default]==2.58.0 <- runtime pin`` (marker left out: it held)."""
        req = self.requirement
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        return " <- ".join((f"{req.name}{extras}{req.specifier}", *self.chain))


@dataclass(frozen=True, slots=True)
class Closure:
    """The result of one walk: what got used, by which chain, and what is missing."""

    used: Mapping[NormalizedName, WheelFile]
    chains: Mapping[NormalizedName, tuple[str, ...]]
    missing: tuple[Missing, ...]
    blocked: frozenset[NormalizedName] = field(default=frozenset())
    """Projects whose only matching wheels are unusable on the target (EK401/EK406 say why)."""
    reached: frozenset[NormalizedName] = field(default=frozenset())
    """Every project name some applicable requirement asked for."""

    @property
    def complete(self) -> bool:
        return not self.missing and not self.blocked


def python_ok(wheel: WheelFile, target: Target) -> bool:
    """Whether ``Requires-Python`` admits the target interpreter (unparsable counts as yes)."""
    if not wheel.requires_python or len(wheel.requires_python) > MAX_REQUIREMENT_CHARS:
        return True
    try:
        spec = SpecifierSet(wheel.requires_python)
        # ValueError: a version with more digits than int() converts (>=999...9).
        return spec.contains(target.full_version, prereleases=True)
    except (InvalidSpecifier, ValueError):
        return True


def usable(wheel: WheelFile, target: Target) -> bool:
    """Readable, tag-compatible with the target, and its Requires-Python admits it."""
    return wheel.error is None and target.accepts(wheel.tags) and python_ok(wheel, target)


def runtime_roots(gym_version: str, gym_requires: Iterable[str], path: str) -> list[Root]:
    """``nemo-gym==<image version>``, ``ray[default]`` and ``openai`` at Gym's own pins, and pip:
    Gym's ``uv venv --seed`` installs pip, with no index only from a vendored wheel.
    """
    roots = [Root(Requirement(f"nemo-gym=={gym_version}"), RUNTIME_ORIGIN, path)]
    for text in gym_requires:
        req = parse_requirement(text)
        if (req is not None and not req.marker
                and canonicalize_name(req.name) in ("ray", "openai")):
            roots.append(Root(req, RUNTIME_ORIGIN, path))
    roots.append(Root(Requirement("pip"), SEED_ORIGIN, path))
    return roots


@lru_cache(maxsize=16384)
def _marker_true(marker: Marker, env: tuple[tuple[str, str], ...], extra: str) -> bool:
    """Evaluate for the target; a marker that cannot be evaluated counts as needed (an
    installer would stop on it too, so the requirement must not silently vanish)."""
    try:
        return marker.evaluate({**dict(env), "extra": extra})
    except (UndefinedComparison, UndefinedEnvironmentName, InvalidVersion, ValueError):
        return True


def applies(req: Requirement, env: tuple[tuple[str, str], ...], extras: Iterable[str]) -> bool:
    """Whether ``req`` is needed on the target when the parent was asked for ``extras``."""
    if req.marker is None:
        return "" in extras
    return any(_marker_true(req.marker, env, extra) for extra in extras)


_Candidate = tuple["Version", "WheelFile"]


@dataclass
class _Walk:
    """Mutable state of one walk; only ``walk`` sees it."""

    index: dict[NormalizedName, list[_Candidate]]
    target: Target
    env: tuple[tuple[str, str], ...]
    used: dict[NormalizedName, WheelFile] = field(default_factory=dict)
    chains: dict[NormalizedName, tuple[str, ...]] = field(default_factory=dict)
    expanded: dict[NormalizedName, set[str]] = field(default_factory=dict)
    missing: dict[NormalizedName, Missing] = field(default_factory=dict)
    blocked: set[NormalizedName] = field(default_factory=set)
    reached: set[NormalizedName] = field(default_factory=set)
    queue: deque[tuple[Requirement, tuple[str, ...], str, int | None]] = field(
        default_factory=deque
    )


def walk(wheels: Iterable[WheelFile], roots: Iterable[Root], target: Target) -> Closure:
    """Resolve ``roots`` against the wheels usable on ``target``, breadth first (so each chain
    recorded is a shortest one). A project is taken at the highest vendored version that fits
    the first requirement reaching it; later requirements it misses are reported missing.
    """
    state = _Walk(_index(wheels), target, tuple(sorted(target.marker_environment().items())))
    for root in roots:
        if applies(root.requirement, state.env, ("",)):
            state.queue.append((root.requirement, (root.origin,), root.path, root.line))
    while state.queue:
        _visit(state, *state.queue.popleft())
    return Closure(
        used=state.used,
        chains=state.chains,
        missing=tuple(state.missing.values()),
        blocked=frozenset(state.blocked),
        reached=frozenset(state.reached),
    )


def _index(wheels: Iterable[WheelFile]) -> dict[NormalizedName, list[_Candidate]]:
    """Readable wheels by project, each with its (known) version."""
    index: dict[NormalizedName, list[_Candidate]] = {}
    for wheel in wheels:
        if wheel.name is not None and wheel.version is not None and wheel.error is None:
            index.setdefault(wheel.name, []).append((wheel.version, wheel))
    return index


def _visit(
    state: _Walk, req: Requirement, chain: tuple[str, ...], path: str, line: int | None
) -> None:
    name = canonicalize_name(req.name)
    state.reached.add(name)
    chosen = state.used.get(name)
    if (
        chosen is None
        or chosen.version is None
        or not req.specifier.contains(chosen.version, prereleases=True)
    ):
        chosen = _choose(state, req, name, chain, path, line)
    if chosen is not None:
        _expand(state, chosen, req.extras)


def _choose(
    state: _Walk,
    req: Requirement,
    name: NormalizedName,
    chain: tuple[str, ...],
    path: str,
    line: int | None,
) -> WheelFile | None:
    """Pick the highest usable vendored version that fits ``req``; pre-releases count, as
    they do for an installer when they are all a find-links directory offers."""
    candidates = state.index.get(name, [])
    fits = [(v, w) for v, w in candidates if req.specifier.contains(v, prereleases=True)]
    good = [(v, w) for v, w in fits if usable(w, state.target)]
    if good:
        wheel = max(good, key=lambda vw: vw[0])[1]
        if name not in state.used:
            state.used[name] = wheel
            state.chains[name] = (f"{name}=={wheel.version}", *chain)
        return wheel
    if fits:
        state.blocked.add(name)
        return None
    if name not in state.missing:  # first (shortest) chain wins; one report per project
        vendored = tuple(str(v) for v in sorted({v for v, _ in candidates}))
        state.missing[name] = Missing(req, chain, path, line, vendored)
    return None


def _only_extra(text: str) -> str | None:
    """``x`` when the marker is ``extra == "x"`` or ``... and extra == "x"`` with no top-level
    ``or``, i.e. the requirement applies only when extra ``x`` is asked for; else None.

    >>> _only_extra('aiohttp>=3.7; extra == "default"'), _only_extra("six")
    ('default', None)
    >>> _only_extra('a; (os_name == "nt" or x) and extra == "y"')
    'y'
    >>> _only_extra('a; b or c and extra == "y"') is None
    True
    """
    match = _LAST_EXTRA.search(text)
    if match is None or ";" not in text:
        return None
    marker = text.split(";", 1)[1]
    while _PARENS.search(marker):
        marker = _PARENS.sub("", marker)
    return None if " or " in marker else canonicalize_name(match.group(1))


def _expand(state: _Walk, wheel: WheelFile, extras: Iterable[str]) -> None:
    name = wheel.name
    assert name is not None  # indexed wheels always have one
    done = state.expanded.setdefault(name, set())
    new = {"", *(canonicalize_name(e) for e in extras)} - done
    if not new:
        return
    done |= new
    chain = state.chains.get(name) or (f"{name}=={wheel.version}",)
    asked = sorted(e for e in new if e)
    if asked:  # name the extra that pulled these in: ray[default]==2.58.0
        chain = (f"{name}[{','.join(asked)}]=={wheel.version}", *chain[1:])
    for text in wheel.requires_dist:
        only = _only_extra(text)
        if only is not None and only not in new:
            continue  # most of ray's 300+ Requires-Dist: skip parsing what no extra asks for
        dep = parse_requirement(text)
        if dep is not None and applies(dep, state.env, tuple(sorted(new))):
            state.queue.append((dep, chain, wheel.path, None))
