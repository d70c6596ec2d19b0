"""The plainest configs of ``envkit.model.yamlio``, read line by line without the parser.

Even the event reader pays libyaml for three Python objects per node (the event and its two
marks): on 1,000 configs listing 1,000 paths each, the events alone cost 1.2 s of CPU before
anything is read from them. Most configs are block mappings of simple keys over one-line plain
scalars and block sequences of them, one node per line; for those the line, the column and the
text of every node can be read off the line itself. This reader accepts only documents made
entirely of such lines (sequences indented under their key or not), blank lines and comments
(a line of its own at any indent, or after a value and a space; printable ASCII), all ASCII,
no tabs, quotes first, flow collections or continuation lines, and returns None at the first
thing outside that grammar (or over a bound), so the event reader decides everything else,
errors included. Values resolve exactly as there:
the caller passes ``resolve``, either ``_yamlscalars.plain_value`` (no PyYAML: the plainest
values, ``Unusual`` for the rest) or PyYAML's implicit resolvers and guarded constructors
(``_yamlevents.resolve_scalar``). Inside a value (never first), quotes, brackets, braces and
commas are plain characters in block context, for libyaml and PyYAML alike: ``it's``,
``${policy_base_url}``, ``a[0], b``.
"""

from __future__ import annotations

import re
from functools import cache
from itertools import repeat
from typing import TYPE_CHECKING, Any

from envkit.model._yamlcore import MAX_DEPTH, MAX_KEYPATH, MAX_NODES, KeyPath, Unusual
from envkit.model._yamlscalars import RESOLVED_FIRST

if TYPE_CHECKING:
    from collections.abc import Callable

    Resolve = Callable[[str], Any]
    """A plain scalar's text -> its value; raises ``Unusual`` for one it leaves to others."""

__all__ = ["read_lines"]

_SAFE = r"""[A-Za-z0-9_./~+=@%()$'"{}\[\],-]"""
_REST = rf"{_SAFE}*(?:[: ]{_SAFE}+)*"  # no ": ", "::", " #", two spaces, trailing ":" or space
_VALUE = rf"(?:[A-Za-z0-9_./~+$(]|-(?={_SAFE})){_REST}"  # never starts with an indicator
_COMMENT = r"(?: +#[ -~]*)?"  # after a space, printable ASCII to the end of the line
_ITEM = re.compile(rf"({_VALUE}){_COMMENT}")
_ENTRY = re.compile(rf"([A-Za-z_][A-Za-z0-9_.-]*):(?: +({_VALUE}))?{_COMMENT}")
_BLANK = re.compile(r"(?: *(?:#[ -~]*)?\n)*")
"""Blank lines, lines of spaces and comment lines (at any indent: they close no block)."""
_STR_FIRST = "".join(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_/$("
                     if c not in RESOLVED_FIRST)
_STRING = rf"[{re.escape(_STR_FIRST)}]{_REST}"
"""A plain item no implicit resolver looks at: a string, as written."""


class _Block:
    """An open block mapping: the column its keys start at, where its key paths start."""

    __slots__ = ("depth", "indent", "mapping", "prefix")

    def __init__(self, mapping: dict[Any, Any], indent: int, prefix: KeyPath, depth: int) -> None:
        self.mapping, self.indent, self.prefix, self.depth = mapping, indent, prefix, depth


@cache
def _run(indent: int) -> re.Pattern[str]:
    """Consecutive string items at ``indent``: one match per run however long."""
    return re.compile(rf"(?: {{{indent}}}- {_STRING}\n)+")


def read_lines(resolve: Resolve,
               text: str) -> tuple[Any, dict[KeyPath, int], dict[int, int]] | None:
    """``(data, lines, columns)`` as ``read_events`` gives them, or None: not in the grammar, or
    a value ``resolve`` left to others.

    ``resolve`` sees only values some implicit resolver may claim (``RESOLVED_FIRST``).
    """
    if not text.isascii() or "\t" in text or "\r" in text:
        return None
    reader = _LineReader(resolve, text if text.endswith("\n") else text + "\n")
    try:
        return reader.read()
    except Unusual:  # outside the grammar here, or a value for the node path: events decide
        return None


class _LineReader:
    """One document; ``read`` walks its rows once, ``_items`` takes a sequence in runs.

    ``at`` is the offset of a row's first character, ``line`` its 1-based number.
    """

    def __init__(self, resolve: Resolve, text: str) -> None:
        self.resolve, self.text = resolve, text
        self.lines: dict[KeyPath, int] = {}
        self.columns: dict[int, int] = {}
        self.visits = 1  # as the node walk counts: the root, every value and item

    def read(self) -> tuple[Any, dict[KeyPath, int], dict[int, int]]:
        text = self.text
        at, line = self._skip_blank(0, 1)
        if at == len(text) or text[at] == " ":
            raise Unusual  # empty, or an indented root
        self.lines[()], self.columns[line] = line, 1
        data: dict[Any, Any] = {}
        stack = [_Block(data, 0, (), 0)]
        while at < len(text):
            indent = _indent(text, at)
            while stack[-1].indent > indent:  # the root (indent 0) is never popped
                stack.pop()
            top = stack[-1]
            if top.indent != indent:
                raise Unusual  # a continuation line, or a dedent to no open block
            at, line = self._entry(top, at, line, stack)
        return data, self.lines, self.columns

    def _skip_blank(self, at: int, line: int) -> tuple[int, int]:
        blank = _BLANK.match(self.text, at)  # always matches, if only ""
        end = blank.end() if blank is not None else at
        return end, line + self.text.count("\n", at, end)

    def _entry(self, top: _Block, at: int, line: int, stack: list[_Block]) -> tuple[int, int]:
        """Read ``key:`` or ``key: value`` at ``at`` into ``top``; where the next row starts."""
        text, indent = self.text, top.indent
        end = text.index("\n", at)
        found = _ENTRY.fullmatch(text, at + indent, end)
        if found is None:
            raise Unusual
        raw_key, raw_value = found.group(1, 2)
        path = (*top.prefix, raw_key) if top.depth < MAX_KEYPATH else top.prefix
        if path in self.lines:
            raise Unusual  # a repeated key: its items' lines must not be overwritten
        key = self._scalar(raw_key)
        self._visit(top.depth)
        self.lines[path], self.columns[line] = line, indent + 1
        if raw_value is not None:
            top.mapping[key] = self._scalar(raw_value)
            return self._skip_blank(end + 1, line + 1)
        child, child_line = self._skip_blank(end + 1, line + 1)
        inner = _indent(text, child) if child < len(text) else 0
        if inner >= indent and text.startswith("- ", child + inner):  # at the key's indent too
            items: list[Any] = []
            top.mapping[key] = items
            return self._items(items, child, child_line, inner, path, top.depth + 1)
        if inner <= indent:
            top.mapping[key] = self._scalar("")  # `key:` alone: null
        else:
            mapping: dict[Any, Any] = {}
            top.mapping[key] = mapping
            stack.append(_Block(mapping, inner, path, top.depth + 1))
        return child, child_line

    def _items(self, items: list[Any], at: int, line: int, indent: int, prefix: KeyPath,
               depth: int) -> tuple[int, int]:
        """Read the ``- value`` rows at ``indent`` from ``at`` into ``items``; the row after.

        The hot loop of a fan-out (a million items): a run of string items is one regex
        match, one split and bulk dict updates; any other item is read on its own.
        """
        if depth >= MAX_DEPTH:
            raise Unusual  # the event reader raises TooLarge with its own message
        text, run, dash = self.text, _run(indent), " " * indent + "- "
        while at < len(text):
            found = run.match(text, at)
            if found is not None:
                end = found.end()
                values: list[Any] = text[at + len(dash):end - 1].split("\n" + dash)
            elif text.startswith(dash, at) and (item := _ITEM.fullmatch(
                    text, at + len(dash), eol := text.index("\n", at))):
                end, values = eol + 1, [self._scalar(item.group(1))]
            else:
                break
            self._add(items, values, line, indent, prefix, depth)
            at, line = self._skip_blank(end, line + len(values))
        return at, line

    def _add(self, items: list[Any], values: list[Any], line: int, indent: int,
             prefix: KeyPath, depth: int) -> None:
        """Append ``values`` (rows from ``line`` on) with their key paths and columns."""
        self.visits += len(values)
        if self.visits > MAX_NODES:
            raise Unusual  # the event reader raises TooLarge with its own message
        lines = list(range(line, line + len(values)))  # one int per line, shared by both maps
        if depth < MAX_KEYPATH:
            first = len(items)
            self.lines.update(zip([(*prefix, i) for i in range(first, first + len(values))],
                                  lines, strict=True))
        self.columns.update(zip(lines, repeat(indent + 3)))
        items.extend(values)

    def _visit(self, depth: int) -> None:
        self.visits += 1
        if self.visits > MAX_NODES or depth >= MAX_DEPTH:
            raise Unusual  # the event reader raises TooLarge with its own message

    def _scalar(self, value: str) -> Any:
        if value and value[0] not in RESOLVED_FIRST:
            return value
        return self.resolve(value)


def _indent(text: str, at: int) -> int:
    return _SPACES.match(text, at).end() - at  # type: ignore[union-attr] # " *" always matches


_SPACES = re.compile(" *")
