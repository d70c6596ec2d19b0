"""Read YAML the way a validator needs it: safely, bounded, and with line numbers.

Gym configs come from users and from converters; a validator must survive anything in them
without executing tags, expanding alias bombs, or blowing the stack, and it must be able to
point at the line of the key that is wrong. PyYAML's constructed objects carry no marks, so
the node tree is walked once to record ``key path -> line`` beside the data.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["MAX_YAML_BYTES", "KeyPath", "YamlDoc", "YamlReadError", "parse_yaml", "read_mapping"]

try:  # libyaml is ~10x faster; the pure-Python loader is the fallback, same semantics.
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

MAX_YAML_BYTES = 8 * 1024 * 1024
"""Gym configs are a few KiB; anything past this is not a config and is not parsed."""

_MAX_NODES = 200_000
"""Node visits allowed while walking; aliases count every time they are expanded."""

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class YamlDoc:
    """One parsed YAML file. ``data`` is None when ``error`` says why it could not be read."""

    path: str
    data: Any = None
    error: str | None = None
    error_line: int | None = None
    lines: Mapping[KeyPath, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def line_of(self, *keypath: str | int) -> int | None:
        """Line of the deepest recorded prefix of ``keypath`` (1-based), or None."""
        path: KeyPath = tuple(keypath)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)


def parse_yaml(path: str, raw: bytes) -> YamlDoc:
    """Parse ``raw`` as one YAML document; never raises over the content."""
    if len(raw) > MAX_YAML_BYTES:
        msg = (f"file is {len(raw) / 1e6:.1f} MB; configs over {MAX_YAML_BYTES // 2**20} MiB "
               "are not parsed")
        return YamlDoc(path, error=msg)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return YamlDoc(path, error=f"not UTF-8 (byte 0x{raw[exc.start]:02x})", error_line=line)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return YamlDoc(path, data=None, lines={(): 1})
        lines = _record_lines(node)
        data = _construct(loader, node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        return YamlDoc(path, error=f"invalid YAML: {exc.problem or exc}", error_line=line)
    except yaml.YAMLError as exc:
        return YamlDoc(path, error=f"invalid YAML: {exc}")
    except _TooLarge as exc:
        return YamlDoc(path, error=str(exc))
    except RecursionError:
        return YamlDoc(path, error="invalid YAML: nested too deeply")
    finally:
        loader.dispose()
    return YamlDoc(path, data=data, lines=lines)


class YamlReadError(ValueError):
    """A YAML file that cannot be read as a mapping; the message names the file and line."""


def read_mapping(path: Path, display: str | None = None) -> dict[str, Any]:
    """``path`` parsed as a top-level mapping, within the same bounds as ``envkit validate``.

    Why not ``yaml.safe_load``: the builder, converter and runtime read the same user files the
    validator does, so an alias bomb or a 50 MB "config" must fail the same bounded way there.

    :raises YamlReadError: unreadable, not YAML, over the bounds, or not a mapping.
    """
    name = display or str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        msg = f"{name}: cannot read: {exc.strerror or exc}"
        raise YamlReadError(msg) from None
    doc = parse_yaml(name, raw)
    if not doc.ok:
        where = f"{name}:{doc.error_line}" if doc.error_line else name
        msg = f"{where}: {doc.error}"
        raise YamlReadError(msg)
    if not isinstance(doc.data, dict):
        kind = "empty" if doc.data is None else f"a {type(doc.data).__name__}"
        msg = f"{name}: expected a mapping at the top level, found {kind}"
        raise YamlReadError(msg)
    return doc.data


class _TooLarge(Exception):
    pass


class _Unusual(Exception):
    """A node the fast path leaves to PyYAML's constructor (merge keys, custom tags)."""


_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"


def _construct(loader: yaml.SafeLoader, root: yaml.Node) -> Any:
    """Build plain data from the node tree: the same values as ``construct_document`` for the
    str/map/seq documents configs are made of, at about half its cost (profiled on 200 Gym
    configs). Scalars other than strings still go through ``SafeConstructor`` (ints, floats,
    bools, nulls, timestamps); anything unusual falls back to PyYAML entirely."""
    try:
        return _build(loader, root, {})
    except (_Unusual, RecursionError):
        return loader.construct_document(root)


def _build(loader: yaml.SafeLoader, node: yaml.Node, memo: dict[int, Any]) -> Any:
    if id(node) in memo:  # an alias: share the object, as PyYAML does
        return memo[id(node)]
    if isinstance(node, yaml.ScalarNode):
        value = node.value if node.tag == _STR else loader.construct_object(node)
    elif isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
        value = memo[id(node)] = []
        value.extend(_build(loader, item, memo) for item in node.value)
    elif isinstance(node, yaml.MappingNode) and node.tag == _MAP:
        value = memo[id(node)] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                raise _Unusual
            key = _build(loader, key_node, memo)
            if not isinstance(key, Hashable):
                raise _Unusual  # PyYAML reports "found unhashable key" with its mark
            value[key] = _build(loader, value_node, memo)
    else:
        raise _Unusual
    memo[id(node)] = value
    return value


def _record_lines(root: yaml.Node) -> dict[KeyPath, int]:
    """Map each key path to the line of its key (mappings) or item (sequences)."""
    lines: dict[KeyPath, int] = {(): root.start_mark.line + 1}
    stack: list[tuple[KeyPath, yaml.Node]] = [((), root)]
    visits = 0
    while stack:
        prefix, node = stack.pop()
        visits += 1
        if visits > _MAX_NODES:
            msg = f"document expands to more than {_MAX_NODES:,} nodes (alias bomb?); not parsed"
            raise _TooLarge(msg)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key: str | int = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                path = (*prefix, key)
                lines.setdefault(path, key_node.start_mark.line + 1)
                stack.append((path, value_node))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                path = (*prefix, index)
                lines.setdefault(path, item.start_mark.line + 1)
                stack.append((path, item))
    return lines
