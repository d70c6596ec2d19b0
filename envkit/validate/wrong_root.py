"""What to tell someone who named a directory that is no package (EK100): the fix depends on
what lies around it (a package one level down, several packages, a package above), and each
case gets the command that validates what was meant.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.model.package import MANIFEST
from envkit.validate.discovery import SKIPPED_DIRS, owning_package, packages_below

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["wrong_root"]

_LISTED = 5
"""Packages named in a message before "and N more"."""


def wrong_root(path: Path, exclude: Sequence[str] = ()) -> tuple[str, str | None]:
    """(message, hint) for the directory ``path`` that holds no manifest; hint ``None``: the
    rule's own (add the manifest)."""
    name = path.as_posix()
    below = packages_below(path, exclude)
    if len(below) == 1 and below[0].parent == path:
        pkg = below[0].as_posix()
        return (f"`{name}` holds no `{MANIFEST}`: it is not a package, but `{pkg}` one "
                "directory down is",
                f"Validate and upload `{pkg}/` itself (`envkit validate {pkg}/`; `nemo files "
                f"upload ./{pkg}/ ...`, the trailing slash selects the directory's contents): "
                "an archive that unpacks one level down has this shape.")
    if below:
        return _many(path, below)
    owner = owning_package(path.resolve() / MANIFEST)
    if owner is not None and owner != path.resolve():
        pkg = owner.as_posix() if path.is_absolute() else os.path.relpath(owner)
        return (f"`{name}` is not a package root: it lies inside the package `{pkg}`",
                f"Validate the package root: `envkit validate {pkg}/`.")
    message = f"`{name}` holds no `{MANIFEST}`, and no package lies below it"
    return message, _source_tree_hint(path)


def _source_tree_hint(path: Path) -> str | None:
    """The command that makes a package of the sources below ``path`` (a Gym tree, a
    verifiers environment): adding a manifest by hand is not the advice it needs."""
    out = (path / "package").as_posix()
    servers = _children_with(path / "resources_servers", "configs")
    if servers:
        src = " ".join((path / "resources_servers" / s).as_posix() for s in servers[:3])
        return (f"This is a source tree: build the package from its Gym server"
                f"{'s' if len(servers) > 1 else ''} first, `envkit build {_rel(src)} -o {out}`, "
                f"then `envkit validate {out}`.")
    envs = _children_with(path / "environments", "pyproject.toml")
    if envs:
        env = _rel((path / "environments" / envs[0]).as_posix())
        return ("This is a source tree: convert its verifiers environment first, `envkit "
                f"convert verifiers --hub-id local/{envs[0]} --source {env} -o {out} "
                f"--dataset-dir {out}-data`, then `envkit validate {out}`.")
    return None


def _children_with(parent: Path, marker: str) -> list[str]:
    """Sub-directories of ``parent`` that hold ``marker``, sorted."""
    return sorted(name for name in _subdirs(parent) if (parent / name / marker).exists())


def _rel(shown: str) -> str:
    """A path as typed after ``cd``: ``./x`` -> ``x``."""
    return " ".join(part.removeprefix("./") for part in shown.split(" "))


def _many(path: Path, below: list[Path]) -> tuple[str, str]:
    name = path.as_posix()
    listed = ", ".join(p.as_posix() for p in below[:_LISTED])
    more = f" and {len(below) - _LISTED} more" if len(below) > _LISTED else ""
    count = f"{len(below)} packages lie" if len(below) > 1 else "a package lies"
    message = (f"`{name}` holds no `{MANIFEST}` and is no workspace root, so it is not a "
               f"package; {count} below it: {listed}{more}")
    by_path = " ".join(f"{p.as_posix()}/" for p in below[:3]) + (" ..." if len(below) > 3 else "")
    globs = _globs(path, below)
    shown = ", ".join(f'"{g}"' for g in globs[:_LISTED]) + (", ..." if len(globs) > _LISTED else "")
    where = ("under `[tool.envkit]` in its pyproject.toml" if (path / "pyproject.toml").is_file()
             else "to an envkit.toml there")
    hint = (f"Validate the packages by path (`envkit validate {by_path}`), or make `{name}` a "
            f"workspace root: add `packages = [{shown}]` {where}; then `envkit validate` "
            "there checks every member.")
    return message, hint


def _globs(root: Path, below: list[Path]) -> list[str]:
    """Member globs for ``below``: ``parent/*`` where every visible sub-directory of a parent
    is one of them (a glob then adds none that is no package), else the paths themselves."""
    by_parent: dict[Path, set[str]] = {}
    for pkg in below:
        by_parent.setdefault(pkg.parent, set()).add(pkg.name)
    out: list[str] = []
    for parent, names in by_parent.items():
        rel = parent.relative_to(root).as_posix()
        prefix = "" if rel == "." else f"{rel}/"
        visible = {n for n in _subdirs(parent) if not n.startswith(".") and n not in SKIPPED_DIRS}
        if len(names) > 1 and names == visible:
            out.append(f"{prefix}*")
        else:
            out += [f"{prefix}{n}" for n in sorted(names)]
    return out


def _subdirs(parent: Path) -> set[str]:
    """The directories in ``parent`` (links not followed); none when it cannot be listed."""
    try:
        return {e.name for e in os.scandir(parent) if e.is_dir(follow_symlinks=False)}
    except OSError:
        return set()
