"""What Gym makes of one top-level config value: a server, a near-miss, or not a server at all.

Gym decides per top-level key (``maybe_get_server_instance_config`` + ``is_almost_server``)
whether the value is a server instance, and ``gym env start`` (``RunHelper._start``) then
walks it without further checks. ``classify`` rebuilds that reading, with the reason when a
block looks like a server but will not run; ``find_refs`` lists the ``{type, name}`` server
references inside a server's fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from envkit.model.diagnostics import close_matches
from envkit.model.package import SERVER_TYPES

if TYPE_CHECKING:
    from envkit.model.yamlio import KeyPath

__all__ = ["Ref", "Shape", "classify", "find_refs", "fmt_keypath"]


@dataclass(frozen=True, slots=True)
class Shape:
    """What Gym makes of an instance body: a server, a near-miss, or not a server at all."""

    kind: Literal["server", "malformed", "other"]
    server_type: str | None = None
    impl: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    problem: str | None = None
    keypath: KeyPath = ()
    loud: bool = False
    """True when Gym fails on the block itself; False when Gym silently skips it."""
    hint: str | None = None
    effect: str = "Gym aborts spin-up (AlmostServerError)"
    """What Gym does with a loud block."""


class Ref(NamedTuple):
    """A ``{type, name}`` server reference inside a server's fields."""

    keypath: tuple[str | int, ...]
    server_type: str
    name: str
    direct: bool
    """A direct field of the server: the only refs Gym checks when it parses the config."""


def _launcher_crash(body: Mapping[str, Any]) -> Shape | None:
    """``RunHelper._start`` indexes ``list(value)[0]`` two levels down without a guard.

    An empty top-level mapping, or one whose first value is an empty mapping, crashes
    ``gym env start`` with IndexError even though the parse accepted it.
    """
    effect = "`gym env start` crashes on it (IndexError)"
    if not body:
        return Shape("malformed", problem="is an empty mapping", loud=True, effect=effect)
    first = next(iter(body))
    inner = body[first]
    if isinstance(inner, dict) and not inner:
        problem = f"`{first}` is an empty mapping"
        return Shape("malformed", problem=problem, keypath=(first,), loud=True, effect=effect)
    return None


def _looks_like_server(body: Mapping[str, Any]) -> bool:
    """``gym env start`` launches any ``{<first key>: {<first key>: {entrypoint: ...}}}``.

    ``RunHelper._start`` walks the first key at each level without validating the block, so a
    misspelt server type still gets launched from ``<misspelt>/<impl>/`` and fails there.
    """
    inner = next(iter(body.values()), None)
    fields = next(iter(inner.values()), None) if isinstance(inner, dict) else None
    return isinstance(fields, dict) and "entrypoint" in fields


def _unknown_type(body: Mapping[str, Any]) -> Shape:
    key = str(next(iter(body)))
    close = close_matches(key, SERVER_TYPES, n=1, cutoff=0.6)
    hint = f"did you mean `{close[0]}`?" if close else f"use one of: {', '.join(SERVER_TYPES)}"
    problem = f"unknown server type `{key}`"
    effect = f"`gym env start` still launches it from `{key}/` and fails"
    return Shape("malformed", problem=problem, keypath=(key,), hint=hint, loud=True, effect=effect)


def _impl_shape(server_type: str, inner: Any) -> Shape:
    if not isinstance(inner, dict) or len(inner) != 1:
        count = len(inner) if isinstance(inner, dict) else 0
        loud = isinstance(inner, dict) and any(isinstance(v, dict) and "entrypoint" in v
                                               for v in inner.values())
        problem = f"`{server_type}` must hold exactly one implementation, found {count}"
        return Shape("malformed", server_type, problem=problem, keypath=(server_type,), loud=loud)
    impl, fields = next(iter(inner.items()))
    if not isinstance(fields, dict) or "entrypoint" not in fields:
        problem = f"`{server_type}.{impl}` has no `entrypoint`"
        return Shape("malformed", server_type, str(impl), problem=problem,
                     keypath=(server_type, impl))
    if not isinstance(fields["entrypoint"], str):
        problem = f"`{server_type}.{impl}.entrypoint` must be a string"
        return Shape("malformed", server_type, str(impl), problem=problem,
                     keypath=(server_type, impl, "entrypoint"), loud=True)
    return Shape("server", server_type, str(impl), fields)


def classify(body: Any) -> Shape:
    """Gym's reading of a top-level value (``maybe_get_server_instance_config`` +
    ``is_almost_server``), with the reason when it is a server block that will not run."""
    if not isinstance(body, dict):
        return Shape("other")
    crash = _launcher_crash(body)
    if crash is not None:
        return crash
    types = [k for k in body if k in SERVER_TYPES]
    if not types:
        return _unknown_type(body) if _looks_like_server(body) else Shape("other")
    if len(types) > 1:
        problem = f"has {len(types)} server types ({', '.join(types)})"
        effect = "Gym runs one of them and its refs and relays break"
        return Shape("malformed", problem=problem, keypath=(types[1],), loud=True, effect=effect)
    return _impl_shape(types[0], body[types[0]])


def find_refs(fields: Mapping[str, Any]) -> list[Ref]:
    """Every ``{type, name}`` ref in a server's fields, direct or nested in mappings/lists."""
    refs: list[Ref] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((k,), v) for k, v in fields.items()]
    while stack:
        keypath, value = stack.pop()
        ref = isinstance(value, dict) and value.get("type") in SERVER_TYPES
        if ref and isinstance(value.get("name"), str):
            refs.append(Ref(keypath, value["type"], value["name"], len(keypath) == 1))
        elif isinstance(value, dict):
            stack.extend(((*keypath, k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend(((*keypath, i), v) for i, v in enumerate(value))
    return sorted(refs, key=lambda r: [str(p) for p in r.keypath])


def fmt_keypath(keypath: tuple[str | int, ...]) -> str:
    """``a.b[0].c`` as the user would write the key in YAML terms."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in keypath).lstrip(".")
