"""OmegaConf interpolations in Gym configs, judged the way Gym resolves them.

When Gym parses its config it resolves only the top-level scalars and each server's direct
fields (``global_config_dict.items()``, ``run_server_config_dict.items()``); a nested value is
resolved later, inside the server process, when that server reads it. So a missing key in a
direct field aborts spin-up (``ConfigInterpolationError``) while the same key one level down
fails only when the server reads it. Gym-filled keys (``head_server`` ...) exist by then but not
yet during parse. ``???`` anywhere aborts (``ConfigMissingValuesError``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from envkit.model.gym_data import gym_data
from envkit.validators.gym.model import DIRECTIVE_KEYS, Opaque, directive_source
from envkit.validators.gym.shapes import classify

if TYPE_CHECKING:
    from collections.abc import Iterator

    from envkit.model.yamlio import KeyPath
    from envkit.validators.gym.model import GymView

__all__ = ["JOB_KEYS", "Finding", "find_interpolation_problems", "interpolations"]

JOB_KEYS = frozenset({"policy_base_url", "policy_api_key", "policy_model_name"})
"""What the training job injects into Gym's global config (the customization and "GRPO and Reward
Environments" guides, policy_model.yaml)."""

_RESOLVERS = frozenset({
    # OmegaConf's built-ins, plus the two Gym registers in nemo_gym/global_config.py.
    "oc.env", "oc.create", "oc.decode", "oc.deprecated", "oc.select", "oc.dict.keys",
    "oc.dict.values", "inherit_from", "copy",
})
_RESOLVER = re.compile(r"^([A-Za-z_][\w.]*):(.*)$", re.DOTALL)
_MISSING = "???"


class Finding(NamedTuple):
    """An interpolation that will not resolve: where it is and why."""

    keypath: tuple[str | int, ...]
    message: str
    direct: bool
    """Resolved during Gym's parse (an error) rather than later in the server (a warning)."""


def interpolations(text: str) -> list[str]:
    """The outermost ``${...}`` bodies in ``text`` (escaped ``\\${`` skipped).

    >>> interpolations("a ${x.y} b ${oc.env:V,${z}}")
    ['x.y', 'oc.env:V,${z}']
    """
    found: list[str] = []
    i = 0
    while (start := text.find("${", i)) != -1:
        if start > 0 and text[start - 1] == "\\":
            i = start + 2
            continue
        depth, j = 1, start + 2
        while j < len(text) and depth:
            if text.startswith("${", j):
                depth, j = depth + 1, j + 2
                continue
            depth -= text[j] == "}"
            j += 1
        if depth:
            break  # unterminated: OmegaConf reads it as a plain string
        found.append(text[start + 2 : j - 1])
        i = j
    return found


def _has_default(args: str) -> bool:
    """A comma outside any nested ``${...}``: the resolver's second argument."""
    depth = 0
    for ch in args:
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            return True
    return False


def _lookup(merged: Mapping[str, Any], segments: list[str]) -> bool:
    node: Any = merged
    for seg in segments:
        if isinstance(node, Opaque):
            return True  # a Gym built-in config's value: known by name only
        if isinstance(node, str) and "${" in node:
            return True  # goes through another interpolation: judged where it is written
        if isinstance(node, dict) and seg in node:
            node = node[seg]
        elif isinstance(node, list) and _index(seg) < len(node):
            node = node[int(seg)]
        else:
            return False
    return True


def _index(seg: str) -> int:
    """``seg`` as a list index: ASCII digits only (``"²".isdigit()`` is true too) and short (a
    5,000-digit index is past ``int()``'s limit); anything else is an index no list reaches."""
    return int(seg) if seg.isascii() and seg.isdigit() and len(seg) < 10 else 1 << 62


def _key_problem(expr: str, view: GymView, direct: bool) -> str | None:
    if expr.startswith("."):
        return None  # relative to the node: resolved against the same file's structure
    segments = [s for s in re.split(r"[.\[\]]", expr.strip()) if s]
    if not segments or segments[0] in JOB_KEYS:
        return None
    data = gym_data()
    if segments[0] in data.runtime_keys and segments[0] not in view.merged:
        if direct and segments[0] not in data.runtime_keys_for_fields:
            return (
                f"`${{{expr}}}` is resolved while Gym parses the config, before Gym sets "
                f"`{segments[0]}`"
            )
        return None
    if _lookup(view.merged, segments):
        return None
    return f"`${{{expr}}}`: no config in the package defines `{'.'.join(segments)}`"


def _resolver_problem(name: str, args: str) -> str | None:
    if name not in _RESOLVERS:
        return f"unknown resolver `{name}` (Gym registers {', '.join(sorted(_RESOLVERS))})"
    if name == "oc.env" and not _has_default(args):
        var = args.strip()
        return f"`${{oc.env:{var}}}` has no default; it fails wherever `{var}` is unset"
    return None


def expression_problem(expr: str, view: GymView, direct: bool) -> str | None:
    match = _RESOLVER.match(expr.strip())
    if match:
        return _resolver_problem(match.group(1), match.group(2))
    return _key_problem(expr, view, direct)


def _walk(value: Any, keypath: KeyPath) -> Iterator[tuple[KeyPath, Any]]:
    stack = [(keypath, value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            stack.extend(((*path, k), v) for k, v in node.items() if isinstance(k, str | int))
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in enumerate(node))
        else:
            yield path, node


def _server_prefixes(view: GymView) -> set[KeyPath]:
    """``(instance, type, impl)`` of every top-level value Gym reads as a server."""
    shapes = ((key, classify(value)) for key, value in view.merged.items())
    return {(key, s.server_type or "", s.impl or "") for key, s in shapes if s.kind == "server"}


def _directive_problem(keypath: KeyPath, value: str, view: GymView) -> str | None:
    """A Gym ``_inherit_from``/``_copy`` directive (key or string form) whose source does not
    exist: Gym applies every directive while it parses (``_recursively_swap_keys``), anywhere."""
    if keypath and keypath[-1] in DIRECTIVE_KEYS:
        source: str | None = value
    else:
        found = directive_source(value)
        source = found[0] if found else None
    if source is None or _lookup(view.merged, source.split(".")):
        return None
    return f"`{source}` does not exist in the merged config (InheritPathNotFoundError)"


def find_interpolation_problems(view: GymView) -> Iterator[Finding]:
    """Every unresolvable interpolation and every ``???`` left in the merged config, in key
    path order (a key path's own findings in the order its value holds them). Only the
    findings are sorted, not every leaf: most leaves have nothing to judge."""
    servers = _server_prefixes(view)
    found = [finding for keypath, value in _walk(view.merged, ()) if isinstance(value, str)
             for finding in _value_problems(keypath, value, view, servers)]
    yield from sorted(found, key=lambda f: [str(p) for p in f.keypath])


def _value_problems(keypath: KeyPath, value: str, view: GymView,
                    servers: set[KeyPath]) -> list[Finding]:
    if value.strip() == _MISSING:
        return [Finding(keypath, "value is `???` (missing) after merging every config", True)]
    if "${" not in value and not (keypath and keypath[-1] in DIRECTIVE_KEYS):
        return []  # no interpolation and no directive: nothing else to judge
    directive = _directive_problem(keypath, value, view)
    if directive:
        return [Finding(keypath, directive, True)]
    # Top-level scalars and a server's direct fields are resolved by Gym's parse itself.
    direct = len(keypath) == 1 or (len(keypath) == 4 and keypath[:3] in servers)
    return [Finding(keypath, problem, direct) for expr in interpolations(value)
            if (problem := expression_problem(expr, view, direct))]
