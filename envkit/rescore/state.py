"""Whether a resources server's ``/verify`` can score a recorded response again, alone.

Why refuse at all: a server that keeps per-episode state scores the response against it; a
bare ``/verify`` long after the episode would score it against none, and the "new reward"
would be an artefact of the missing state. ``unknown`` (Gym's default ``REVERIFY_MODE``) is
accepted only when the server keeps Gym's own stateless ``/seed_session``, since a server that
seeds per-episode state overrides that route. Pure over the two answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["BASE_SEED_MODELS", "Verdict", "can_reverify", "seed_models"]

BASE_SEED_MODELS = frozenset({"BaseSeedSessionRequest", "ResourcesSeedSessionRequest"})
"""The request models of Gym's default ``/seed_session`` (``SimpleResourcesServer``), which
keeps no state."""


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    reason: str


def seed_models(openapi: Mapping[str, Any]) -> frozenset[str] | None:
    """The schema names ``POST /seed_session`` takes; ``None``: the document does not say.

    >>> ref = lambda n: {"$ref": f"#/components/schemas/{n}"}
    >>> doc = {"paths": {"/seed_session": {"post": {"requestBody": {"content": {
    ...     "application/json": {"schema": {"anyOf": [ref("A"), ref("B")]}}}}}}}}
    >>> sorted(seed_models(doc))
    ['A', 'B']
    """
    post = ((openapi.get("paths") or {}).get("/seed_session") or {}).get("post") or {}
    content = ((post.get("requestBody") or {}).get("content") or {}).get("application/json")
    schema = (content or {}).get("schema")
    if not isinstance(schema, Mapping):
        return None
    options = schema.get("anyOf") or schema.get("oneOf") or [schema]
    names = set()
    for option in options:
        ref = option.get("$ref") if isinstance(option, Mapping) else None
        if not isinstance(ref, str) or not ref.startswith("#/components/schemas/"):
            return None
        names.add(ref.rsplit("/", 1)[1])
    return frozenset(names)


def can_reverify(server: str, mode: str | None, openapi: Mapping[str, Any] | None) -> Verdict:
    """Whether ``server``'s ``/verify`` may score recorded responses again.

    >>> can_reverify("s", "stateless", None).ok
    True
    >>> can_reverify("s", "unsupported", None).ok
    False
    >>> body = {"schema": {"$ref": "#/components/schemas/BaseSeedSessionRequest"}}
    >>> base = {"paths": {"/seed_session": {"post": {"requestBody": {"content": {
    ...     "application/json": body}}}}}}
    >>> can_reverify("s", "unknown", base).ok
    True
    """
    if mode == "stateless":
        return Verdict(True, f"`{server}` declares reverify_mode 'stateless'")
    if mode == "unsupported":
        return Verdict(False, f"`{server}` declares reverify_mode 'unsupported': its reward "
                              "depends on per-episode state a bare /verify cannot restore")
    models = seed_models(openapi or {})
    if models is not None and models <= BASE_SEED_MODELS:
        return Verdict(True, f"`{server}` keeps Gym's stateless /seed_session")
    if models is None:
        why = "its /seed_session is not described in its OpenAPI document"
    else:
        why = f"its /seed_session takes {', '.join(sorted(models))}: it seeds per-episode state"
    shown = "no reverify_mode" if mode is None else f"reverify_mode {mode!r}"
    return Verdict(False, f"`{server}` declares {shown} and {why}, which a bare /verify "
                          "cannot restore")
