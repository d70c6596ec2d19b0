"""The usual case of ``envkit.model.yamlio``: data and positions straight from the events.

A Gym config is plain mappings, sequences and untagged scalars. For those, one pass over the
parser's events builds the data and the positions without composing a node tree (no callbacks
per node, no nodes for the garbage collector to scan). The values are PyYAML's: the loader's
own resolvers and (guarded) constructor. Anchors, aliases, explicit tags and merge keys raise
``Unusual``: the caller then reads the document through the node path.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import yaml

from envkit.model._yamlnodes import (
    MAX_DEPTH,
    MAX_KEYPATH,
    MAX_NODES,
    STR_TAG,
    KeyPath,
    Loader,
    TooLarge,
    Unusual,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["read_events"]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_END = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
_ANY_FIRST = None in Loader.yaml_implicit_resolvers
"""A wildcard resolver (none in the safe loader) would have to see every plain scalar."""
_RESOLVED_FIRST = frozenset(Loader.yaml_implicit_resolvers)
"""First characters some implicit resolver looks at; a plain scalar starting with any other
character is a string without asking them."""


class _Frame:
    """An open mapping or sequence: where its children go and what their key paths start
    with."""

    __slots__ = ("container", "depth", "grow", "prefix")

    def __init__(self, container: dict[Any, Any] | list[Any], prefix: KeyPath, depth: int) -> None:
        self.container = container
        self.prefix = prefix
        self.depth = depth
        self.grow = depth < MAX_KEYPATH


class _Positions:
    """``key path -> line`` and ``line -> first column``, filled by ``_child``; ``visits``
    counts nodes as the node walk does (the root, every value and item)."""

    def __init__(self, line: int, column: int) -> None:
        self.lines: dict[KeyPath, int] = {(): line}
        self.columns: dict[int, int] = {line: column}
        self.visits = 1


_PLAIN_KEYS = frozenset({str, int, float, bool, type(None)})
"""What a plain scalar key resolves to; all hashable (anything else takes the ABC check)."""


def read_events(loader: Loader) -> tuple[Any, dict[KeyPath, int], dict[int, int]]:
    """``(data, lines, columns)`` of the single document ``loader`` holds.

    :raises Unusual: the document needs the node path (see the module docstring), or is not
        exactly one document (the node path reports that with PyYAML's message).
    :raises TooLarge: more nodes or deeper nesting than the node walk allows.
    :raises yaml.YAMLError: not YAML (the parser's own error and mark).
    """
    get: Callable[[], yaml.Event] = loader.get_event
    get()  # StreamStartEvent
    event = get()
    if isinstance(event, yaml.StreamEndEvent):
        return None, {(): 1}, {}
    event = get()  # after DocumentStartEvent: the root node
    if event.start_mark is None:
        raise Unusual  # the parser marks every event; only a hand-made one has no mark
    positions = _Positions(event.start_mark.line + 1, event.start_mark.column + 1)
    if isinstance(event, yaml.ScalarEvent):
        data, stack = _scalar(loader, event), []
    else:
        data, frame = _start(event, (), 0)
        stack = [frame]
    while stack:
        top = stack[-1]
        event = get()
        if isinstance(event, _END):
            stack.pop()
            continue
        opened = _child(loader, get, top, event, positions)
        if opened is not None:
            stack.append(opened)
    if not isinstance(get(), yaml.DocumentEndEvent) or not isinstance(get(), yaml.StreamEndEvent):
        raise Unusual  # a second document: the composer's error says so
    return data, positions.lines, positions.columns


def _child(loader: Loader, get: Callable[[], yaml.Event], top: _Frame, event: yaml.Event,
           positions: _Positions) -> _Frame | None:
    """Read the next entry of ``top`` (starting at ``event``); the frame it opens, if any.

    The hot loop of the reader (once per node): positions are recorded inline.
    """
    container = top.container
    mark = event.start_mark
    if mark is None:
        raise Unusual  # as in read_events: the parser marks every event
    if isinstance(container, dict):
        if not isinstance(event, yaml.ScalarEvent):
            raise Unusual  # a collection as a key: PyYAML reports it unhashable
        key = _scalar(loader, event)
        # ``type(...) in``: an ABC check per key is a Python call on every key.
        if type(key) not in _PLAIN_KEYS and not isinstance(key, Hashable):
            raise Unusual
        path = (*top.prefix, event.value) if top.grow else top.prefix
        event = get()
    else:
        path = (*top.prefix, len(container)) if top.grow else top.prefix
    positions.visits += 1
    if positions.visits > MAX_NODES or top.depth >= MAX_DEPTH:
        raise TooLarge(_too_large(positions.visits))
    line, column = mark.line + 1, mark.column + 1
    positions.lines.setdefault(path, line)
    if column < positions.columns.get(line, column + 1):
        positions.columns[line] = column
    if isinstance(event, yaml.ScalarEvent):  # the common case, without a frame
        value, frame = _scalar(loader, event), None
    else:
        value, frame = _start(event, path, top.depth + 1)
    if isinstance(container, dict):
        container[key] = value
    else:
        container.append(value)
    return frame


def _too_large(visits: int) -> str:
    if visits > MAX_NODES:
        return f"document has more than {MAX_NODES:,} nodes; not parsed"
    return f"nested more than {MAX_DEPTH} levels deep; not parsed"


def _start(event: yaml.Event, path: KeyPath, depth: int) -> tuple[Any, _Frame]:
    """The empty collection a node starts, and its frame."""
    if not isinstance(event, yaml.CollectionStartEvent) or event.tag or event.anchor:
        raise Unusual  # an alias, an anchor, an explicit tag
    container: dict[Any, Any] | list[Any] = (
        {} if isinstance(event, yaml.MappingStartEvent) else [])
    return container, _Frame(container, path, depth)


def _scalar(loader: Loader, event: yaml.ScalarEvent) -> Any:
    """The value PyYAML's composer and constructor give an untagged, unanchored scalar."""
    if event.tag is not None or event.anchor is not None:
        raise Unusual
    value: str = event.value
    if not event.implicit[0] or (value and value[0] not in _RESOLVED_FIRST and not _ANY_FIRST):
        return value  # quoted, or plain but no resolver would look at it: a string
    return _resolve_scalar(loader, value, event.implicit, event.style)


def _resolve_scalar(loader: Loader, value: str, implicit: tuple[bool, bool],
                   style: str | None) -> Any:
    """The value of an untagged scalar that some implicit resolver may claim (``_scalar``'s
    slow half).

    :raises Unusual: a merge key, or a value the constructor refuses (the node path decides).
    """
    # PyYAML's stubs leave ``resolve`` untyped; this is its signature.
    resolve: Callable[[type[yaml.Node], str, tuple[bool, bool]], str] = loader.resolve
    tag = resolve(yaml.ScalarNode, value, implicit)
    if tag == STR_TAG:
        return value
    if tag == _MERGE_TAG:
        raise Unusual  # `<<`: PyYAML's merge semantics live in the node path
    # No marks: a constructor error here goes to the node path, which reports its own.
    node = yaml.ScalarNode(tag, value, None, None, style)
    try:
        return loader.construct_object(node)
    except yaml.constructor.ConstructorError:
        # The node path composes the whole document before it constructs, so a syntax error
        # further down wins there; it is the one to report, so the node path decides.
        raise Unusual from None
