"""``wheels.lock``: what a wheels package vendors, for which target, and why; one model.

``envkit build`` and ``envkit convert verifiers`` write it (``Lock.dumps``; no timestamps, so
a rebuild is byte-identical), and the gate takes the package's default target from it. The
reader never raises over content: an unreadable lock is ``LockDoc.error``, an unreadable entry
is skipped and named in ``LockDoc.problems``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from envkit.model._paths import LOCK_NAME
from envkit.model.jsonfile import JsonObject, parse_object, read_object
from envkit.model.target import Target, TargetError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = [
    "LOCK_NAME",
    "LOCK_VERSION",
    "MAX_LOCK_BYTES",
    "Lock",
    "LockDict",
    "LockDoc",
    "LockedRequirement",
    "LockedWheel",
    "parse_lock",
    "read_lock",
]

LOCK_VERSION = "1.0"
MAX_LOCK_BYTES = 16 * 1024 * 1024
"""A lock lists a few hundred wheels (a few hundred KiB); a larger file is not parsed."""

_TARGET = re.compile(r"cp(\d)(\d+)-manylinux_(\d+)_(\d+)_(\w+)")


class _WheelDict(TypedDict):
    name: str
    version: str
    filename: str
    sha256: str | None
    url: str | None
    requested_by: list[str]
    why: NotRequired[list[str]]
    built_from: NotRequired[dict[str, str]]
    source: NotRequired[str]


_RequirementDict = TypedDict("_RequirementDict", {"requirement": str, "from": list[str]})


class LockDict(TypedDict):
    """The JSON shape (version ``1.0``)."""

    version: str
    target: str
    python_version: str
    gym_version: NotRequired[str]
    resolver: str
    requirements: list[_RequirementDict]
    wheels: list[_WheelDict]


@dataclass(frozen=True, slots=True)
class LockedRequirement:
    requirement: str
    origins: tuple[str, ...] = ()
    """Where the line came from (``resources_servers/x/requirements.txt``, the Gym runtime)."""


@dataclass(frozen=True, slots=True)
class LockedWheel:
    """One vendored file. The field order is the converter's positional one."""

    name: str
    version: str
    filename: str
    url: str | None
    sha256: str | None
    requested_by: tuple[str, ...] = ()
    why: tuple[str, ...] | None = None
    """Shortest ``requirement -> ... -> name`` chain (``envkit build``)."""
    built_from: tuple[str, str] | None = None
    """``(sdist url, sdist sha256)`` of a pure wheel built from an sdist."""
    source: str | None = None
    """Where the pin came from (``envkit convert verifiers``: index, --wheels-dir, ...)."""

    def to_dict(self) -> _WheelDict:
        out: _WheelDict = {"name": self.name, "version": self.version,
                           "filename": self.filename, "sha256": self.sha256, "url": self.url,
                           "requested_by": list(self.requested_by)}
        if self.why is not None:
            out["why"] = list(self.why)
        if self.built_from is not None:
            out["built_from"] = {"sdist_url": self.built_from[0],
                                 "sdist_sha256": self.built_from[1]}
        if self.source:
            out["source"] = self.source
        return out


@dataclass(frozen=True, slots=True)
class Lock:
    target: str
    """``cp313-manylinux_2_28_aarch64``: ``str(Target)`` of the build."""
    python_version: str
    resolver: str
    requirements: tuple[LockedRequirement, ...] = ()
    wheels: tuple[LockedWheel, ...] = ()
    gym_version: str | None = None
    version: str = LOCK_VERSION

    @property
    def target_spec(self) -> Target | None:
        """``target`` as a ``Target``; None when it is not one the image can be."""
        match = _TARGET.fullmatch(self.target)
        if match is None:
            return None
        py_major, py_minor, g_major, g_minor, arch = map(str, match.groups())
        try:
            return Target(arch=arch, python=(int(py_major), int(py_minor)),
                          glibc=(int(g_major), int(g_minor)))
        except TargetError:
            return None

    def to_dict(self) -> LockDict:
        requirements: list[_RequirementDict] = [
            {"requirement": r.requirement, "from": list(r.origins)} for r in self.requirements]
        gym = {} if self.gym_version is None else {"gym_version": self.gym_version}
        return cast("LockDict", {  # key order as since 1.0
            "version": self.version, "target": self.target,
            "python_version": self.python_version, **gym, "resolver": self.resolver,
            "requirements": requirements, "wheels": [w.to_dict() for w in self.wheels]})

    def dumps(self) -> str:
        """The file's text: the one writer's format (2-space JSON, final newline)."""
        return json.dumps(self.to_dict(), indent=2) + "\n"


@dataclass(frozen=True, slots=True)
class LockDoc:
    """``wheels.lock`` as read: ``lock`` is None when ``error`` says why it could not be."""

    path: str = LOCK_NAME
    lock: Lock | None = None
    error: str | None = None
    problems: tuple[str, ...] = field(default=())
    """Entries left out (a wheel without a name, a requirement that is not a string)."""

    @property
    def ok(self) -> bool:
        return self.error is None


def read_lock(path: Path) -> LockDoc:
    """Read ``path`` (a regular file the package walk found); never raises over content."""
    return _lock_of(read_object(path, MAX_LOCK_BYTES))


def parse_lock(raw: bytes) -> LockDoc:
    """The lock in ``raw``, leniently (see the module docstring)."""
    return _lock_of(parse_object(raw, MAX_LOCK_BYTES))


def _lock_of(doc: JsonObject) -> LockDoc:
    data = doc.data
    if data is None:
        return LockDoc(error=doc.error)
    problems: list[str] = []
    lock = Lock(
        target=_text(data, "target"), python_version=_text(data, "python_version"),
        resolver=_text(data, "resolver"),
        requirements=tuple(_requirements(data.get("requirements"), problems)),
        wheels=tuple(_wheels(data.get("wheels"), problems)),
        gym_version=_text(data, "gym_version") or None, version=_text(data, "version"),
    )
    return LockDoc(lock=lock, problems=tuple(problems))


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return value if isinstance(value, str) else ""


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _requirements(value: object, problems: list[str]) -> list[LockedRequirement]:
    out = []
    for index, item in enumerate(value if isinstance(value, list) else []):
        if isinstance(item, dict) and isinstance(item.get("requirement"), str):
            out.append(LockedRequirement(item["requirement"], _strings(item.get("from"))))
        else:
            problems.append(f"`requirements[{index}]` has no `requirement` string")
    return out


def _wheels(value: object, problems: list[str]) -> list[LockedWheel]:
    out = []
    for index, item in enumerate(value if isinstance(value, list) else []):
        wheel = _wheel(item) if isinstance(item, dict) else None
        if wheel is None:
            problems.append(f"`wheels[{index}]` lacks a `name`, `version` or `filename` string")
        else:
            out.append(wheel)
    return out


def _wheel(item: Mapping[str, Any]) -> LockedWheel | None:
    name, version, filename = (_text(item, k) for k in ("name", "version", "filename"))
    if not (name and version and filename):
        return None
    built = item.get("built_from")
    built_from = (_text(built, "sdist_url"), _text(built, "sdist_sha256")) \
        if isinstance(built, dict) else None
    return LockedWheel(
        name, version, filename, url=_text(item, "url") or None,
        sha256=_text(item, "sha256") or None, requested_by=_strings(item.get("requested_by")),
        why=_strings(item["why"]) if isinstance(item.get("why"), list) else None,
        built_from=built_from, source=_text(item, "source") or None,
    )
