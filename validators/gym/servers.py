"""EK300-EK303, EK307-EK310: each server block and the directory Gym runs it from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envkit.model.gym_data import gym_data
from envkit.model.package import INSTALL_MARKERS, SERVER_TYPES, safe_relpath
from envkit.validators._base import closest
from envkit.validators.gym.model import own_servers, view_of
from envkit.validators.gym.rules import (
    EK300,
    EK301,
    EK302,
    EK303,
    EK307,
    EK308,
    EK309,
    EK310,
    RESOURCES,
    E,
    W,
)
from envkit.validators.gym.shapes import find_refs, fmt_keypath

if TYPE_CHECKING:
    from collections.abc import Iterator

    from envkit.model.diagnostics import Diagnostic
    from envkit.model.package import Package
    from envkit.validators._base import Inputs, Rule
    from envkit.validators.gym.model import GymView, Instance

__all__ = ["check_config_docs", "check_domains", "check_duplicate_instances", "check_impl_dirs",
           "check_server_shapes"]


def check_config_docs(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK300: each config must parse and be a mapping (an empty file is an empty mapping)."""
    pkg = inputs.package
    for path, doc in (pkg.configs if pkg else {}).items():
        if not doc.ok:
            yield EK300.at(path, f"cannot be read as YAML: {doc.error}", line=doc.error_line)
        elif doc.data is not None and not isinstance(doc.data, dict):
            kind = type(doc.data).__name__
            yield EK300.at(path, f"top level is a {kind}, not a mapping", line=doc.line_of())


def _referenced_names(view: GymView) -> set[str]:
    """Every name a ref in any block's implementation fields points at, server or not."""
    bodies = (i.body for i in view.instances.values() if isinstance(i.body, dict))
    return {ref.name for body in bodies for value in body.values() if isinstance(value, dict)
            for fields in value.values() if isinstance(fields, dict) for ref in find_refs(fields)}


def _type_impl(body: Any) -> tuple[str, str] | None:
    if not isinstance(body, dict):
        return None
    for key, inner in body.items():
        if isinstance(inner, dict) and len(inner) == 1 and key in SERVER_TYPES:
            return str(key), str(next(iter(inner)))
    return None


def _conflicting_kinds(instance: Instance) -> tuple[str, str] | None:
    """The first two files that give ``instance`` different server types / implementations."""
    seen: dict[tuple[str, str], str] = {}
    for definition in instance.defs:
        kind = _type_impl(definition.body)
        if kind is not None:
            seen.setdefault(kind, definition.path)
    if len(seen) < 2:
        return None
    (first, first_path), (second, second_path) = list(seen.items())[:2]
    return f"`{'.'.join(first)}` in {first_path}", f"`{'.'.join(second)}` in {second_path}"


def check_server_shapes(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK301: every server block as Gym validates it, after merging all configs."""
    view = view_of(inputs.package)
    if view is None:
        return
    referenced = _referenced_names(view)
    for instance in view.instances.values():
        shape = instance.shape
        if shape.kind != "malformed" or _conflicting_kinds(instance):
            continue
        if instance.only_in(view.builtin):
            continue  # Gym's own config, known only in summary
        path, line = instance.locate(*shape.keypath)
        loud = shape.loud or instance.name in referenced
        effect = (
            shape.effect if shape.loud
            else "Gym skips it, so refs to it fail" if loud
            else "Gym silently skips it: this server never runs"
        )
        message = f"`{instance.name}`: {shape.problem}; {effect}"
        yield EK301.at(path, message, line=line, hint=shape.hint, severity=E if loud else W)


def _scalar_conflicts(instance: Instance,
                      roots: set[str]) -> Iterator[tuple[tuple[str | int, ...], str, str]]:
    """``(keypath, earlier file, later file)`` for each leaf a later sibling overrides.

    Only files listed in the manifest count: a config overriding what its own `config_paths`
    pulled in is how Gym's configs are meant to be specialised.
    """
    leaves: dict[tuple[str | int, ...], tuple[Any, str]] = {}
    for definition in (d for d in instance.defs if d.path in roots):
        stack: list[tuple[tuple[str | int, ...], Any]] = [((), definition.body)]
        while stack:
            keypath, value = stack.pop()
            if isinstance(value, dict):
                stack.extend(((*keypath, k), v) for k, v in value.items())
                continue
            before = leaves.get(keypath)
            if before is not None and before[0] != value and before[1] != definition.path:
                yield keypath, before[1], definition.path
            leaves[keypath] = (value, definition.path)


def check_duplicate_instances(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK307: one instance name in several files: kind conflicts abort, value overrides warn."""
    view, pkg = view_of(inputs.package), inputs.package
    if view is None or pkg is None:
        return
    roots = {p for p in (safe_relpath(v) for v in pkg.config_paths()) if p}
    for instance in view.instances.values():
        conflict = _conflicting_kinds(instance)
        if conflict:
            path, line = instance.defs[-1].path, instance.defs[-1].doc.line_of(instance.name)
            message = (
                f"`{instance.name}` is {conflict[0]} and {conflict[1]}; Gym merges them into "
                "one invalid block (AlmostServerError)"
            )
            yield EK307.at(path, message, line=line)
            continue
        for keypath, earlier, later in _scalar_conflicts(instance, roots):
            line = view.docs[later].line_of(instance.name, *keypath)
            message = (f"`{fmt_keypath((instance.name, *keypath))}` is set in {earlier} and again, "
                       "differently, here; Gym keeps this value")
            yield EK307.at(later, message, line=line, severity=W)


def check_domains(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK302/EK303: Gym validates `domain` on every server type (``Optional[Domain]``)."""
    view = view_of(inputs.package)
    domains = gym_data().domains
    for instance in own_servers(view):
        fields = instance.shape.fields
        value = fields.get("domain")
        path, line = instance.locate(*instance.field_path("domain"))
        if instance.shape.server_type == RESOURCES:
            if value is None:
                yield EK302.at(path, f"`{instance.name}` has no `domain`", line=line)
            elif not isinstance(value, str) or value not in domains:
                yield EK302.at(path, f"`{instance.name}`: `domain: {value!r}` is not in Gym's set",
                               line=line)
        elif value is not None and (not isinstance(value, str) or value not in domains):
            yield EK303.at(path, f"`{instance.name}`: `domain: {value!r}` is not in Gym's set "
                                 "(AlmostServerError)", line=line)


def _impl_findings(pkg: Package, instance: Instance) -> Iterator[tuple[Rule, str, str]]:
    """``(rule, message, hint)`` for the directory Gym would run for ``instance``.

    Gym's ``_resolve_server_dir`` takes ``<type>/<impl>`` (the key may hold ``/``) from the
    package when it has an install marker there, else from its install root.
    """
    server_type, impl = instance.shape.server_type or "", instance.shape.impl or ""
    dir_path = f"{server_type}/{impl}"
    entry = pkg.entries.get(dir_path)
    builtin = gym_data().is_builtin(server_type, impl)
    if entry is None or entry.kind != "dir":
        if not builtin:
            message = f"`{instance.name}` runs `{dir_path}/`, which neither the package nor Gym has"
            close = closest(impl, gym_data().builtins.get(server_type, ()))
            yield EK308, message, f"did you mean the built-in `{close}`?" if close else EK308.fix
        return
    if not any(f"{dir_path}/{m}" in pkg.entries for m in INSTALL_MARKERS):
        code = (e.kind == "file" and e.path.endswith(".py") for e in pkg.files_under(dir_path))
        if builtin and any(code):
            message = (f"`{dir_path}/` has code but no requirements.txt/pyproject.toml: "
                       f"Gym runs its built-in `{impl}` instead")
            yield EK309, message, EK309.fix
        return
    shown = instance.shape.fields.get("entrypoint")
    entrypoint = safe_relpath(str(shown))
    found = pkg.entries.get(f"{dir_path}/{entrypoint}") if entrypoint else None
    if found is None or found.kind not in ("file", "symlink"):
        message = f"`{instance.name}`: entrypoint {shown!r} is not a file in `{dir_path}/`"
        yield EK310, message, EK310.fix


def check_impl_dirs(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK308/EK309/EK310: the directory Gym resolves (package first, then its built-ins)."""
    view, pkg = view_of(inputs.package), inputs.package
    if view is None or pkg is None:
        return
    for instance in view.servers():
        for rule, message, hint in _impl_findings(pkg, instance):
            keypath = ("entrypoint",) if rule is EK310 else ()
            path, line = instance.locate(*instance.field_path(*keypath))
            yield rule.at(path, message, line=line, hint=hint)
