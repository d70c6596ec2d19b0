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

from envkit.errors import InvalidError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["MAX_YAML_BYTES", "KeyPath", "YamlDoc", "YamlReadError", "parse_yaml", "read_mapping"]

try:  # libyaml is ~10x faster; the pure-Python loader is the fallback, same semantics.
    _BaseLoader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _BaseLoader = yaml.SafeLoader

MAX_YAML_BYTES = 8 * 1024 * 1024
"""Gym configs are a few KiB; anything past this is not a config and is not parsed."""

_MAX_NODES = 200_000
"""Node visits allowed while walking; aliases count every time they are expanded."""

_MAX_DEPTH = 1_000
"""Nesting allowed. Configs nest a handful of levels; a recursive alias (``a: &a [*a]``) nests
without end, and libyaml's composer overflows the C stack past ~20,000 levels."""

_MAX_KEYPATH = 32
"""Key paths recorded for line numbers are at most this long (memory: nodes x length)."""

_MAX_INT_CHARS = 100
"""Longest integer scalar read. Python refuses decimal strings over 4,300 digits, but a hex,
octal or sexagesimal literal parses to any size and then fails wherever it is printed."""

_SCALAR_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError)
"""What PyYAML's scalar constructors raise on a bad value (``!!bool maybe``, ``!!int ''``,
``2020-13-45``, ``!!timestamp nope``): plain Python errors, not ``YAMLError``."""

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
    try:
        _check_nesting(raw, text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return YamlDoc(path, error=f"invalid YAML: {exc.problem or exc}",
                       error_line=mark.line + 1 if mark is not None else None)
    except _TooLarge as exc:
        return YamlDoc(path, error=str(exc))
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


class YamlReadError(InvalidError, ValueError):
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


_INDICATORS = (b"[", b"{", b"-", b"?", b":")
_SAFE_INDICATORS = 5_000
"""Every nesting level needs one of ``_INDICATORS``; libyaml's composer recurses in C and
overflows an 8 MiB stack (a segfault, not an exception) somewhere between 20,000 and 50,000
levels, so fewer indicators than this cannot crash it even on a smaller thread stack."""
_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def _check_nesting(raw: bytes, text: str) -> None:
    """Refuse nesting past ``_MAX_DEPTH`` before anything recursive sees the document.

    A count of indicator bytes clears nearly every file; the rest get one pass over the
    parser's events (iterative, no node tree) that stops at the first level too deep, or once
    there are more nodes than the walk would visit anyway (keys are not visited: twice).

    :raises _TooLarge: nested too deeply.
    :raises yaml.MarkedYAMLError: not YAML (reported the same as when composing).
    """
    if len(raw) <= _SAFE_INDICATORS or sum(map(raw.count, _INDICATORS)) <= _SAFE_INDICATORS:
        return
    loader = _BaseLoader(text)
    try:
        depth = events = 0
        while loader.check_event():
            event = loader.get_event()
            events += 1
            if events > 2 * _MAX_NODES:
                msg = f"document has more than {2 * _MAX_NODES:,} nodes; not parsed"
                raise _TooLarge(msg)
            if isinstance(event, _OPEN):
                depth += 1
                if depth > _MAX_DEPTH:
                    msg = f"nested more than {_MAX_DEPTH} levels deep; not parsed"
                    raise _TooLarge(msg)
            elif isinstance(event, _CLOSE):
                depth -= 1
    finally:
        loader.dispose()


def _guarded(construct: Any) -> Any:
    """``construct`` with over-long integers refused and its plain Python errors turned into a
    ``ConstructorError`` carrying the node's mark (so the report names the line)."""

    def guarded(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        if node.tag == _INT and isinstance(node.value, str) and len(node.value) > _MAX_INT_CHARS:
            msg = f"integer longer than {_MAX_INT_CHARS} characters; not read"
            raise yaml.constructor.ConstructorError(None, None, msg, node.start_mark)
        try:
            return construct(loader, node)
        except _SCALAR_ERRORS as exc:
            value = node.value if isinstance(node.value, str) else ""
            why = f": {exc}" if type(exc) is ValueError else ""
            msg = f"{value[:40]!r} is not a valid {node.tag.rsplit(':', 1)[-1]}{why}"
            raise yaml.constructor.ConstructorError(None, None, msg, node.start_mark) from None

    return guarded


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """The safe loader with every constructor guarded (see ``_guarded``)."""

    yaml_constructors = {  # noqa: RUF012 - PyYAML's own class-level registry
        tag: _guarded(construct) for tag, construct in _BaseLoader.yaml_constructors.items()
    }


class _Unusual(Exception):
    """A node the fast path leaves to PyYAML's constructor (merge keys, custom tags)."""


_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
_INT = "tag:yaml.org,2002:int"


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
    """Map each key path to the line of its key (mappings) or item (sequences).

    Paths stop growing at ``_MAX_KEYPATH`` keys (deeper nodes share their ancestor's line), so
    memory stays linear in the nodes visited however deep the aliases expand."""
    lines: dict[KeyPath, int] = {(): root.start_mark.line + 1}
    stack: list[tuple[KeyPath, yaml.Node, int]] = [((), root, 0)]
    visits = 0
    while stack:
        prefix, node, depth = stack.pop()
        visits += 1
        if visits > _MAX_NODES:
            msg = f"document expands to more than {_MAX_NODES:,} nodes (alias bomb?); not parsed"
            raise _TooLarge(msg)
        if depth > _MAX_DEPTH:
            msg = f"nested more than {_MAX_DEPTH} levels deep (a recursive alias?); not parsed"
            raise _TooLarge(msg)
        grow = depth < _MAX_KEYPATH
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key: str | int = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                path = (*prefix, key) if grow else prefix
                lines.setdefault(path, key_node.start_mark.line + 1)
                stack.append((path, value_node, depth + 1))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                path = (*prefix, index) if grow else prefix
                lines.setdefault(path, item.start_mark.line + 1)
                stack.append((path, item, depth + 1))
    return lines
