"""The package's Gym configs merged the way Gym merges them, read from ``Package.configs`` only.

Gym (``nemo_gym.global_config.GlobalConfigDictParser.parse``) loads every ``config_paths`` file,
orders them so that a file overrides what it pulled in and a later sibling overrides an earlier
one (``load_extra_config_paths``), deep-merges them with ``OmegaConf.merge`` and then applies
top-level ``_inherit_from`` / ``_copy``. A top-level key is a server instance only if its value
validates as one of the four server-type configs; anything else (scalars, interpolation
sources, reserved keys) is left alone. This module rebuilds that view without running Gym, so
the checks can point at the file and line each finding comes from.

Every mapping in a config's data is a ``dict`` (``envkit.model.yamlio`` builds it), so the checks
test ``isinstance(x, dict)``: ``Mapping`` would run the ABC hook on every node they walk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any, NamedTuple

from envkit.model.gym_data import builtin_config, gym_data
from envkit.model.package import safe_relpath
from envkit.model.yamlio import YamlDoc
from envkit.validators.gym.rules import AGENTS
from envkit.validators.gym.shapes import Shape, classify

if TYPE_CHECKING:
    from collections.abc import Iterator

    from envkit.model.package import Package

__all__ = ["DIRECTIVE_KEYS", "Definition", "GymView", "Instance", "Opaque", "build_view",
           "deep_merge", "directive_source", "includes_of", "merge_order", "own_servers",
           "resolve_config", "view_of"]

DIRECTIVE_KEYS = ("_inherit_from", "_copy")
"""Gym's top-level ``_inherit_from`` (pops its source) and ``_copy`` (keeps it), key form."""


class Definition(NamedTuple):
    """One top-level key of one config file."""

    path: str
    doc: YamlDoc
    body: Any


@dataclass(frozen=True, slots=True)
class Instance:
    """A top-level config entry after Gym's merge: its name, merged body, every definition it
    came from, and its shape (server, agent, ...)."""

    name: str
    body: Any
    defs: tuple[Definition, ...]
    shape: Shape
    inherits: str | None = None

    def only_in(self, paths: frozenset[str]) -> bool:
        """True when every definition comes from ``paths`` (e.g. Gym's built-in configs)."""
        return all(d.path in paths for d in self.defs)

    def locate(self, *keypath: str | int) -> tuple[str, int | None]:
        """File and line of ``keypath`` (below the instance key) in the last file that sets it."""
        full = (self.name, *keypath)
        for definition in reversed(self.defs):
            if full in definition.doc.lines:
                return definition.path, definition.doc.lines[full]
        last = self.defs[-1]
        return last.path, last.doc.line_of(*full)

    def field_path(self, *keypath: str | int) -> tuple[str | int, ...]:
        """Key path below the instance key for a field of the server's implementation block."""
        return (self.shape.server_type or "", self.shape.impl or "", *keypath)


@dataclass(frozen=True, slots=True)
class GymView:
    """A package's configs as Gym loads them: the merge order, the merged instances and top
    level, and what the view could not see (Gym's built-in configs, by name only)."""

    order: tuple[str, ...]
    """Config files in Gym's merge order (later overrides earlier)."""
    instances: Mapping[str, Instance]
    merged: Mapping[str, Any]
    """The merged top level, for interpolation lookups."""
    docs: Mapping[str, YamlDoc] = field(default_factory=dict)
    renamed: Mapping[str, str] = field(default_factory=dict)
    """``{source: target}`` for instances moved by a top-level ``_inherit_from`` (Gym retargets
    environment servers' agent refs to the single target)."""
    builtin: frozenset[str] = frozenset()
    """Config files pulled in from Gym's install root (known from the wheel's summary only)."""
    incomplete: bool = False
    """Some config could not be read (EK300): what it defines is unknown, so "nothing defines
    X" findings are withheld rather than guessed."""

    def locate(self, keypath: tuple[str | int, ...]) -> tuple[str, int | None]:
        """File and line of a merged key path: the last file in merge order that sets it."""
        for path in reversed(self.order):
            if keypath in self.docs[path].lines:
                return path, self.docs[path].lines[keypath]
        for path in reversed(self.order):
            if keypath[:1] in self.docs[path].lines:
                return path, self.docs[path].line_of(*keypath)
        return (self.order[-1], None) if self.order else ("", None)

    def servers(self, server_type: str | None = None) -> Iterator[Instance]:
        return (i for i in self.instances.values() if i.shape.kind == "server"
                and (server_type is None or i.shape.server_type == server_type))


def deep_merge(base: Any, override: Any) -> Any:
    """``OmegaConf.merge`` for plain data: mappings merge key by key, anything else is replaced."""
    if not (isinstance(base, dict) and isinstance(override, dict)):
        return override
    merged = dict(base)
    for key, value in override.items():
        merged[key] = deep_merge(merged[key], value) if key in merged else value
    return merged


class Opaque(dict[str, Any]):
    """A top-level value of a Gym built-in config that envkit knows by name only."""


def _builtin_doc(path: str) -> YamlDoc | None:
    """A built-in config as the summary in ``envkit/data/gym_configs.json`` records it."""
    summary = builtin_config(path)
    if summary is None:
        return None
    data: dict[str, Any] = {key: Opaque() for key in summary["keys"]}
    for name, server in summary["servers"].items():
        data[name] = {server["type"]: {server["impl"]: dict(server["fields"])}}
    if summary["includes"]:
        data["config_paths"] = list(summary["includes"])
    return YamlDoc(path, data=data)


def resolve_config(pkg: Package, rel: str) -> YamlDoc | None:
    """The file Gym loads for ``rel``: the package's (cwd) first, then Gym's install root."""
    if rel in pkg.configs:
        return pkg.configs[rel]
    if rel in pkg.entries:
        return None  # shipped but not a readable regular file: the layout rules report it
    return _builtin_doc(rel)


def includes_of(pkg: Package, rel: str, doc: YamlDoc | None) -> tuple[str, ...]:
    """What ``rel`` pulls in: the package model's normalised list for the package's own
    configs (read once), the summary's for a Gym built-in."""
    if rel in pkg.includes:
        return pkg.includes[rel]
    data = doc.data if doc is not None and doc.ok else None
    nested = data.get("config_paths") if isinstance(data, dict) else None
    values = nested if isinstance(nested, list) else []
    found = (safe_relpath(v) for v in values if isinstance(v, str))
    return tuple(dict.fromkeys(rel for rel in found if rel))


def merge_order(pkg: Package) -> tuple[list[str], dict[str, YamlDoc]]:
    """Gym's ``load_extra_config_paths`` order over the files it would find, and those files.

    Each file is expanded once, at its first appearance (breadth first from the manifest's
    list), and a dict gives each path's index: linear in the include pairs, however many
    configs list each other.
    """
    paths = [p for p in (safe_relpath(v) for v in pkg.config_paths()) if p]  # repeats kept
    index_of = {p: i for i, p in enumerate(paths)}
    roots = len(paths)
    children: list[list[int]] = [[] for _ in paths]
    docs: dict[str, YamlDoc] = {}
    index = 0
    while index < len(paths):
        doc = docs.get(paths[index]) or resolve_config(pkg, paths[index])
        if doc is not None:
            docs[paths[index]] = doc
        for rel in includes_of(pkg, paths[index], doc):
            if rel not in index_of:
                index_of[rel] = len(paths)
                paths.append(rel)
                children.append([])
                children[index].append(len(paths) - 1)
        index += 1
    return [paths[i] for i in _post_order(children, roots) if paths[i] in docs], docs


def _post_order(children: list[list[int]], roots: int) -> list[int]:
    """Children before their parent, siblings in order: an includer overrides what it pulls
    in, a later sibling an earlier one."""
    order: list[int] = []
    pending = [(i, False) for i in reversed(range(roots))]
    while pending:
        i, done = pending.pop()
        if done:
            order.append(i)
            continue
        pending.append((i, True))
        pending.extend((c, False) for c in reversed(children[i]))
    return order


def _definitions(order: list[str], docs: Mapping[str, YamlDoc]) -> dict[str, list[Definition]]:
    reserved = gym_data().reserved_top_level_keys
    found: dict[str, list[Definition]] = {}
    for path in order:
        doc = docs[path]
        if not doc.ok or not isinstance(doc.data, dict):
            continue
        for key, body in doc.data.items():
            if isinstance(key, str) and key not in reserved and not isinstance(body, Opaque):
                found.setdefault(key, []).append(Definition(path, doc, body))
    return found


def directive_source(text: str) -> tuple[str, bool] | None:
    """``(source, pops_source)`` of a ``${inherit_from:...}`` / ``${copy:...}`` string."""
    for prefix, pops in (("${inherit_from:", True), ("${copy:", False)):
        if text.startswith(prefix) and text.endswith("}"):
            return text[len(prefix):-1], pops
    return None


def _inherit_source(body: Any) -> tuple[str, bool] | None:
    """``(source, pops_source)`` for a top-level ``_inherit_from``/``_copy`` of one instance."""
    if isinstance(body, str):
        return directive_source(body)
    if isinstance(body, dict):
        for key, pops in zip(DIRECTIVE_KEYS, (True, False), strict=True):
            if isinstance(body.get(key), str):
                return body[key], pops
    return None


def _apply_inheritance(
    bodies: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """Gym's top-level swap: the target takes the source's body under its own overrides.

    Only whole-instance sources (no dotted path) are followed; a dotted one leaves the body as it
    is. Returns the new bodies, ``{target: source}`` and ``{popped source: its single target}``.
    """
    frozen = dict(bodies)
    inherits: dict[str, str] = {}
    popped: dict[str, list[str]] = {}
    for name, body in frozen.items():
        found = _inherit_source(body)
        if found is None or "." in found[0] or found[0] not in frozen:
            continue
        source, pops = found
        rest = ({k: v for k, v in body.items() if k not in DIRECTIVE_KEYS}
                if isinstance(body, dict) else {})
        bodies[name] = deep_merge(frozen[source], rest)
        inherits[name] = source
        if pops and source not in inherits:
            bodies.pop(source, None)
            popped.setdefault(source, []).append(name)
    renamed = {s: t[0] for s, t in popped.items() if len(t) == 1 and s not in bodies}
    return bodies, inherits, renamed


def build_view(pkg: Package) -> GymView:
    order, docs = merge_order(pkg)
    defs = _definitions(order, docs)
    bodies = {name: reduce(deep_merge, (d.body for d in found)) for name, found in defs.items()}
    bodies, inherits, renamed = _apply_inheritance(bodies)
    composed = composed_source(bodies)
    if composed is not None:
        bodies.pop(composed)
    instances = {
        name: Instance(name, body, tuple(defs[name]), classify(body), inherits.get(name))
        for name, body in bodies.items()
    }
    tops = (docs[path].data for path in order if isinstance(docs[path].data, dict))
    merged: dict[str, Any] = reduce(deep_merge, tops, {})
    # What Gym resolves is the config after its swaps: moved and composed sources are gone.
    merged = {k: bodies.get(k, v) for k, v in merged.items() if k in bodies or k not in defs}
    builtin = frozenset(p for p in order if p not in pkg.configs)
    incomplete = any(not docs[p].ok or not isinstance(docs[p].data, dict | None) for p in order)
    return GymView(tuple(order), instances, merged, {p: docs[p] for p in order}, renamed,
                   builtin, incomplete)


def _agent_fields(body: Any) -> Mapping[str, Any] | None:
    """The implementation block of an agent instance (Gym's ``_agent_instances``)."""
    agents = body.get(AGENTS) if isinstance(body, dict) else None
    if not isinstance(agents, dict) or len(agents) != 1:
        return None
    fields = next(iter(agents.values()))
    return fields if isinstance(fields, dict) else None


def composed_source(bodies: Mapping[str, Any]) -> str | None:
    """The unbound agent Gym's ``compose_unbound_agent`` rehosts the other agents on, and drops.

    An agent whose ``resources_server.name`` is ``???`` is a harness waiting for a task; with
    exactly one such agent and at least one bound agent, Gym copies it onto every bound agent
    and removes it, so its ``???`` never reaches the missing-value check.
    """
    unbound: list[str] = []
    bound: list[str] = []
    for name, body in bodies.items():
        fields = _agent_fields(body)
        ref = fields.get("resources_server") if fields is not None else None
        if isinstance(ref, dict):
            (unbound if ref.get("name") == "???" else bound).append(name)
    return unbound[0] if len(unbound) == 1 and bound else None


_LAST_VIEW: list[tuple[Package, GymView]] = []
"""The view of the last package seen: every check reads the same frozen package in one run."""


def view_of(pkg: Package | None) -> GymView | None:
    """The merged view of ``pkg``'s configs (built once per package), or None without configs."""
    if pkg is None or not pkg.configs:
        return None
    if _LAST_VIEW and _LAST_VIEW[0][0] is pkg:
        return _LAST_VIEW[0][1]
    view = build_view(pkg)
    _LAST_VIEW[:] = [(pkg, view)]
    return view


def own_servers(view: GymView | None, server_type: str | None = None) -> list[Instance]:
    """Servers the package itself writes (not only Gym's built-in configs it pulls in)."""
    if view is None:
        return []
    return [i for i in view.servers(server_type) if not i.only_in(view.builtin)]
