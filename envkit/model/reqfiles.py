"""Requirement files as pip and uv read them (``requirements.txt`` with includes, constraints,
continuations and options; ``pyproject.toml`` dependencies), turned into the roots the closure
walk (``envkit.model.closure``) starts from. Pure functions: no disk, no network.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from packaging.requirements import Requirement

__all__ = [
    "MAX_REQUIREMENT_CHARS",
    "Egress",
    "Root",
    "include_target",
    "marker_roots",
    "parse_requirement",
    "pyproject_roots",
    "requirements_txt_roots",
]

_OPTION = re.compile(r"\s+--?[a-zA-Z]")
_EDITABLE = re.compile(r"^(?:-e|--editable)(?:\s+|=)")
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://|^git\+|^hg\+|^svn\+|^bzr\+")


class Root(NamedTuple):
    """A requirement the install starts from, and where it is written."""

    requirement: Requirement
    origin: str
    """Last link of every chain through it: ``path:line`` or ``runtime pin``."""
    path: str
    line: int | None = None


class Egress(NamedTuple):
    """A requirement only a network can satisfy (URL, VCS ref): never covered by wheels/."""

    text: str
    path: str
    line: int | None


def requirements_txt_roots(
    text: str, path: str, includes: Mapping[str, str] | None = None
) -> tuple[list[Root], list[Egress]]:
    """Roots of a ``requirements.txt`` as Gym's server setup reads it (``uv pip install -r``).

    Comments, options and lines containing ``../..`` (dropped by Gym) are skipped; URLs and VCS
    refs need egress. ``-r FILE`` is followed through ``includes`` (text by path relative to
    the server directory); ``-c FILE`` only constrains versions, so it adds no roots.
    """
    roots: list[Root] = []
    egress: list[Egress] = []
    server_dir = posixpath.dirname(path)
    pending, seen = [(posixpath.basename(path), text)], {posixpath.basename(path)}
    while pending:
        rel, body = pending.pop(0)
        shown = posixpath.join(server_dir, rel) if server_dir else rel
        for line_no, raw in _logical_lines(body):
            target = include_target(raw) if "../.." not in raw else None  # Gym drops ../..
            if target is not None:
                key = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target[1]))
                if target[0] == "-r" and key not in seen and key in (includes or {}):
                    seen.add(key)
                    pending.append((key, (includes or {})[key]))
                continue
            _requirement_line(raw, shown, line_no, roots, egress)
    return roots, egress


_INCLUDE = re.compile(r"^(?:(-[rc])\s*=?\s*|(--requirement|--constraint)(?:\s*=\s*|\s+))(\S+)")


def include_target(line: str) -> tuple[str, str] | None:
    """``("-r" | "-c", file)`` for an include or constraints line, else None.

    >>> include_target("-r base.txt"), include_target("--constraint=c.txt")
    (('-r', 'base.txt'), ('-c', 'c.txt'))
    >>> include_target("-rbase.txt"), include_target("six")
    (('-r', 'base.txt'), None)
    """
    match = _INCLUDE.match(line)
    if match is None:
        return None
    flag = match.group(1) or ("-r" if match.group(2) == "--requirement" else "-c")
    return flag, match.group(3)


def _requirement_line(
    raw: str, path: str, line_no: int, roots: list[Root], egress: list[Egress]
) -> None:
    line = _EDITABLE.sub("", raw)  # `-e git+https://...` needs egress like a plain VCS ref
    if "../.." in line or line.startswith("-"):
        return
    req_text = _OPTION.split(line, maxsplit=1)[0].strip()
    url = _URL.match(req_text) is not None
    # An editable local path (no URL) is built from the tree, not from wheels/: neither.
    req = None if url or raw != line else parse_requirement(req_text)
    if url or (req is not None and req.url):
        egress.append(Egress(req_text, path, line_no))
    elif req is not None:
        roots.append(Root(req, f"{path}:{line_no}", path, line_no))


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(first line number, line)`` with comments cut and ``\\`` continuations joined."""
    pending, start = "", 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not pending:
            start = no
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full, pending = (pending + line).strip(), ""
        if full:
            yield start, full


def pyproject_roots(text: str, path: str) -> tuple[list[Root], list[Egress]]:
    """Roots from ``[project] dependencies`` and ``[build-system] requires``: Gym installs a
    pyproject server with ``uv pip install --no-sources -e .``, which needs both. A malformed
    file yields no roots (EK205/EK3xx own it).
    """
    import tomllib  # a pyproject server's: most packages have none

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return [], []
    roots: list[Root] = []
    egress: list[Egress] = []
    for table, key in (("project", "dependencies"), ("build-system", "requires")):
        section = doc.get(table)
        deps = section.get(key, []) if isinstance(section, dict) else []
        for dep in deps if isinstance(deps, list) else []:
            _pyproject_dep(dep, text, path, roots, egress)
    return roots, egress


def _pyproject_dep(
    dep: object, text: str, path: str, roots: list[Root], egress: list[Egress]
) -> None:
    req = parse_requirement(dep) if isinstance(dep, str) else None
    if req is None or not isinstance(dep, str):
        return
    line = next((no for no, row in enumerate(text.splitlines(), 1) if dep in row), None)
    if req.url:
        if "../.." not in req.url:
            egress.append(Egress(dep, path, line))
        return
    roots.append(Root(req, f"{path}:{line}" if line else path, path, line))


def marker_roots(
    file_name: str, text: str, path: str, includes: Mapping[str, str] | None = None
) -> tuple[list[Root], list[Egress]]:
    """Roots of a server's install marker, ``requirements.txt`` (with its ``-r`` includes)
    or ``pyproject.toml``."""
    if file_name == "requirements.txt":
        return requirements_txt_roots(text, path, includes)
    return pyproject_roots(text, path)


MAX_REQUIREMENT_CHARS = 1024
"""Real requirement strings are tens of characters; longer ones are not parsed."""


@lru_cache(maxsize=8192)
def parse_requirement(text: str) -> Requirement | None:
    """``Requirement(text)``, cached, or None when it does not parse (never raises)."""
    if len(text) > MAX_REQUIREMENT_CHARS:
        return None
    # Here: ``packaging`` compiles its grammar at import, which every start would pay.
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(text)
    except (InvalidRequirement, ValueError):
        return None
