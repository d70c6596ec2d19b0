"""Which row fields a resources server's ``/verify`` reads: from the request model it declares.

Why: ``/verify``'s body is the server's own pydantic request model; a declared field the rows
do not carry silently takes its default, and a verifier that compares every reply with ``""``
scores 0 for all of them, exactly like a constant reward. FastAPI publishes that model in
``/openapi.json``, so the probe reads it without running package code. Pure over that document.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["BASE_FIELDS", "DeclaredField", "FieldSearch", "reference_slots", "verify_fields"]

BASE_FIELDS = frozenset({"responses_create_params", "response"})
"""What every verify request carries (``BaseVerifyRequest``): never a reference."""

_NO_DEFAULT = object()


@dataclass(frozen=True, slots=True)
class DeclaredField:
    name: str
    required: bool
    default: Any = _NO_DEFAULT

    @property
    def empty_default(self) -> bool:
        """A default that says nothing: where a row's reference belongs, not a setting."""
        return self.default is not _NO_DEFAULT and self.default in ("", [], {}, None)

    def describe(self) -> str:
        """As the EK802 message names it.

        >>> DeclaredField("target", False, "").describe()
        "`target` (default '')"
        """
        if self.required or self.default is _NO_DEFAULT:
            return f"`{self.name}` (required)"
        return f"`{self.name}` (default {self.default!r})"


def _resolve(doc: Mapping[str, Any], schema: Any) -> Mapping[str, Any]:
    """Follow one local ``$ref``."""
    if not isinstance(schema, Mapping):
        return {}
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = doc
    for part in ref[2:].split("/"):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def verify_fields(openapi: Mapping[str, Any]) -> tuple[DeclaredField, ...]:
    """The fields ``POST /verify`` declares beyond the base request, in declaration order.

    >>> doc = {"paths": {"/verify": {"post": {"requestBody": {"content": {"application/json":
    ...     {"schema": {"$ref": "#/components/schemas/R"}}}}}}},
    ...     "components": {"schemas": {"R": {"required": ["responses_create_params",
    ...     "response"], "properties": {"responses_create_params": {}, "response": {},
    ...     "target": {"type": "string", "default": ""}}}}}}
    >>> verify_fields(doc)
    (DeclaredField(name='target', required=False, default=''),)
    """
    post = ((openapi.get("paths") or {}).get("/verify") or {}).get("post") or {}
    content = ((post.get("requestBody") or {}).get("content") or {}).get("application/json")
    schema = _resolve(openapi, (content or {}).get("schema"))
    required = set(schema.get("required") or ())
    return tuple(DeclaredField(name, name in required, prop.get("default", _NO_DEFAULT)
                               if isinstance(prop, Mapping) else _NO_DEFAULT)
                 for name, prop in (schema.get("properties") or {}).items()
                 if name not in BASE_FIELDS and not name.startswith("_"))


def reference_slots(fields: Iterable[DeclaredField],
                    rows: Iterable[Mapping[str, Any]]) -> tuple[DeclaredField, ...]:
    """Declared fields a reference could go in (required, or with an empty default) that no
    row carries.

    >>> f = (DeclaredField("target", False, ""), DeclaredField("mode", False, "exact"),
    ...      DeclaredField("expected_answer", True))
    >>> [s.name for s in reference_slots(f, [{"expected_answer": "x"}])]
    ['target']
    """
    carried = {key for row in rows for key in row}
    return tuple(f for f in fields
                 if f.name not in carried and (f.required or f.empty_default))


@dataclass(frozen=True, slots=True)
class FieldSearch:
    """What the probe found out about an oracle that never scored; either part explains it as
    a wrong field (EK802)."""

    scored: tuple[str, str] | None = None
    """(row field, rendering) with which the reference scored once copied into that field."""
    missing: tuple[DeclaredField, ...] = ()

    @property
    def explains(self) -> bool:
        return self.scored is not None or bool(self.missing)

    def describe(self) -> str:
        """The clause the EK802 message ends with."""
        if self.scored is not None:
            field, rendering = self.scored
            return (f"; it scores when the row carries it as `{field}` (rendered "
                    f"`{rendering}`): the verifier reads `{field}`, which the rows lack")
        if self.missing:
            listed = ", ".join(f.describe() for f in self.missing)
            return (f"; the verify request declares {listed}, which the rows lack: the "
                    "verifier compares every reply with that default")
        return ""
