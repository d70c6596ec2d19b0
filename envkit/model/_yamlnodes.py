"""The node path of ``envkit.model.yamlio``: compose, walk, construct, for any document; and
the bounds and signals the event reader (``_yamlevents``) shares with it.

``parse_yaml`` reads most configs straight from the parser's events (``_yamlevents``); a
document with anchors, aliases, explicit tags or merge keys comes here, where libyaml composes
the node tree (aliases shared, not copied), the tree is walked once for positions with every
alias expansion counted, and PyYAML's own (guarded) constructor builds the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["MAX_DEPTH", "MAX_INT_CHARS", "MAX_KEYPATH", "MAX_NODES", "STR_TAG", "BaseLoader",
           "KeyPath", "Loader", "TooLarge", "Unusual", "record_lines"]

if TYPE_CHECKING:
    # PyYAML's stubs do not relate CSafeLoader to SafeLoader, but it has the same interface.
    BaseLoader = yaml.SafeLoader
else:  # libyaml where present; the pure-Python loader is the fallback, same semantics.
    BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KeyPath = tuple[str | int, ...]


class TooLarge(Exception):
    """Over a bound (nodes, depth): reported as "not parsed", never attempted."""


class Unusual(Exception):
    """A node the event reader leaves to the node path (anchors, aliases, explicit tags, merge
    keys)."""


MAX_NODES = 200_000
"""Node visits allowed while walking; aliases count every time they are expanded."""

MAX_DEPTH = 1_000
"""Nesting allowed. Configs nest a handful of levels; a recursive alias (``a: &a [*a]``) nests
without end, and libyaml's composer overflows the C stack past ~20,000 levels."""

MAX_KEYPATH = 32
"""Key paths recorded for line numbers are at most this long (memory: nodes x length)."""

MAX_INT_CHARS = 100
"""Longest integer scalar read. Python refuses decimal strings over 4,300 digits, but a hex,
octal or sexagesimal literal parses to any size and then fails wherever it is printed."""

_SCALAR_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError)
"""What PyYAML's scalar constructors raise on a bad value (``!!bool maybe``, ``!!int ''``,
``2020-13-45``, ``!!timestamp nope``): plain Python errors, not ``YAMLError``."""


def _guarded(func: Callable[[yaml.SafeLoader, yaml.Node], Any]) -> Any:
    """``construct`` with over-long integers refused and its plain Python errors turned into a
    ``ConstructorError`` carrying the node's mark (so the report names the line)."""

    def guarded(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        if node.tag == _INT and isinstance(node.value, str) and len(node.value) > MAX_INT_CHARS:
            msg = f"integer longer than {MAX_INT_CHARS} characters; not read"
            raise yaml.constructor.ConstructorError(None, None, msg, node.start_mark)
        try:
            return func(loader, node)
        except _SCALAR_ERRORS as exc:
            value = node.value if isinstance(node.value, str) else ""
            why = f": {exc}" if type(exc) is ValueError else ""
            msg = f"{value[:40]!r} is not a valid {node.tag.rsplit(':', 1)[-1]}{why}"
            raise yaml.constructor.ConstructorError(None, None, msg, node.start_mark) from None

    return guarded


class Loader(BaseLoader):
    """The safe loader with every constructor guarded (see ``_guarded``)."""

    yaml_constructors = {  # noqa: RUF012 - PyYAML's own class-level registry
        tag: _guarded(func) for tag, func in BaseLoader.yaml_constructors.items()
    }


STR_TAG = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"


def record_lines(root: yaml.Node) -> tuple[dict[KeyPath, int], dict[int, int]]:
    """Map each key path to the line of its key (mappings) or item (sequences), and each line
    to the column of the first key or item on it (both 1-based, from the parser's marks).

    Paths stop growing at ``MAX_KEYPATH`` keys (deeper nodes share their ancestor's line), so
    memory stays linear in the nodes visited however deep the aliases expand."""
    start = root.start_mark
    lines: dict[KeyPath, int] = {(): start.line + 1}
    columns: dict[int, int] = {start.line + 1: start.column + 1}
    stack: list[tuple[KeyPath, yaml.Node, int]] = [((), root, 0)]
    visits = 0
    while stack:
        prefix, node, depth = stack.pop()
        visits += 1
        if visits > MAX_NODES:
            msg = f"document expands to more than {MAX_NODES:,} nodes (alias bomb?); not parsed"
            raise TooLarge(msg)
        if depth > MAX_DEPTH:
            msg = f"nested more than {MAX_DEPTH} levels deep (a recursive alias?); not parsed"
            raise TooLarge(msg)
        for path, first, child in _children(node, prefix, grow=depth < MAX_KEYPATH):
            line, column = first.start_mark.line + 1, first.start_mark.column + 1
            lines.setdefault(path, line)
            if column < columns.get(line, column + 1):
                columns[line] = column
            stack.append((path, child, depth + 1))
    return lines, columns


def _children(
    node: yaml.Node, prefix: KeyPath, *, grow: bool
) -> Iterator[tuple[KeyPath, yaml.Node, yaml.Node]]:
    """``(key path, node whose mark locates it, child to walk)`` for a collection node: the
    key locates a mapping value, an item itself."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key: str | int = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            yield ((*prefix, key) if grow else prefix), key_node, value_node
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield ((*prefix, index) if grow else prefix), item, item
