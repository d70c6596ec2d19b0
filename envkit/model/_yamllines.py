"""Configs read line by line without the parser (``envkit.model.yamlio``).

Even the event reader pays libyaml for three Python objects per node (the event and its two
marks): on 1,000 configs listing 1,000 paths each, the events alone cost 1.2 s of CPU before
anything is read from them; and one config that needs PyYAML in a run costs its process the
import (~9 ms). Configs are block mappings of simple keys over scalars and block sequences of
them, and for those the line, the column and the text of every node can be read off the lines
themselves. This reader accepts documents made of: ``key: value`` rows (a plain key, a path
like ``a/b``, ``a:b``, or a quoted key), ``key:`` rows opening a mapping or a sequence, ``-
value`` rows (sequences indented under their key or not), blank lines and comments (a line of
its own at any indent, or after a value and a space). A value is a plain scalar (continued on
more-indented lines, folded), a quoted one (``_yamltexts``: over lines and with escapes when it
is a mapping's value), a block scalar (``|``, ``>``, clip or strip) or a one-line flow sequence
of plain scalars (``[]``, ``{}``, ``[a, b]``). No tabs, control characters, or characters past
ASCII that are not printable or break a line. It returns None at the first thing outside that
grammar (or over a bound), so the event reader decides everything else, errors included.
Values resolve exactly as there: the caller passes ``resolve``, either
``_yamlscalars.plain_value`` (no PyYAML: the plainest values, ``Unusual`` for the rest) or
PyYAML's implicit resolvers and guarded constructors (``_yamlevents.resolve_scalar``). Inside a
plain value (never first), quotes, brackets, braces, commas, ``|``, ``*`` and ``#`` after a
character are plain characters in block context, for libyaml and PyYAML alike: ``it's``,
``${policy_base_url}``, ``a[0], b``, ``x#y``. ``tests/model/test_yamllines.py`` holds it to the
event reader: every accepted document reads the same, and near misses are left to it.
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

_SAFE = r"[^\x00-\x20:\x7f]"
"""Any character but the space and ``:``: plain anywhere in a value but first (``read_lines``
first refuses control characters, and characters past ASCII that are not printable or break a
line). Negated classes: a class that names the ranges past ASCII costs ``re`` a loop over
65,536 code points to compile (~5 ms each)."""
_AFTER_SPACE = r"[^\x00-\x20:#\x7f]"
"""The same but ``#``, which starts a comment after a space."""
_REST = rf"{_SAFE}*(?::+{_SAFE}+| +{_AFTER_SPACE}{_SAFE}*)*"
"""A ``:`` only before a character (``: `` is a key), spaces only before one that is no ``#``:
never a trailing space or ``:``; one character class per piece (a regex's fast loop)."""
_FIRST = r"[A-Za-z0-9_./~+$(<=;\\^)]"
"""What a value may start with (never an indicator, ``- `` or ``#``)."""
_VALUE = rf"(?:{_FIRST}|[-?](?=[!-~])){_REST}"  # `-x`, `???`: no indicator there
_QUOTED = r"'(?:[^\x00-\x1f'\x7f]|'')*'" + r'|"[^\x00-\x1f"\\\x7f]*"'
"""One-line quoted scalars: single-quoted, or double-quoted without escapes (never resolved)."""
_FLOW_ITEM = r"[A-Za-z0-9_./~+$(][A-Za-z0-9_./~+$()=@%-]*(?: +[A-Za-z0-9_./~+$()=@%-]+)*"
"""A plain item of a one-line flow sequence: no ``:``, ``#`` or flow indicator inside."""
_FLOW = rf"\[ *\]|\{{ *\}}|\[ *{_FLOW_ITEM}(?: *, *{_FLOW_ITEM})* *\]"
_ANY = rf"{_VALUE}|{_QUOTED}|{_FLOW}"
"""A value on its key's line: plain, quoted, or a one-line flow sequence (``[]``, ``{}``)."""
_NOT_PLAIN = frozenset("'\"[{")
"""The first characters of ``_ANY``'s quoted and flow values."""
_COMMENT = r"(?: +#[^\x00-\x1f\x7f]*)?"  # after a space, to the end of the line
_ITEM = re.compile(rf"({_VALUE}){_COMMENT}")
_KEY = r"[A-Za-z_][A-Za-z0-9_./-]*(?::[A-Za-z0-9_./-]+)*"
"""A plain key: a name, a path, ``a:b`` (a ``:`` before a space ends the key)."""
_ENTRY = re.compile(rf"({_KEY}):(?: +({_VALUE}))?{_COMMENT}")
"""The common row: a plain key, a plain value on its line or none. The patterns of rarer rows
below (``_rare``) are compiled when a document has one: a plain config's reader compiles
only these."""
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")
"""A tab, a carriage return, a control character: PyYAML reads or refuses those documents."""
_BLANK = re.compile(r"(?: *(?:#[^\x00-\x1f\x7f]*)?\n)*")
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
def _rare(name: str) -> re.Pattern[str]:
    """``item``: an item of any one-line value; ``entry``: a row with a quoted key or any
    one-line value; ``opening``: a key whose value is quoted over more than one line, has
    escapes, or is a block scalar (``_yamltexts``); ``continued``: a plain value's next line,
    more indented than its key (folded into it with one space)."""
    return re.compile({
        "item": rf"({_ANY}){_COMMENT}",
        "entry": rf"({_KEY}|{_QUOTED}):(?: +({_ANY}))?{_COMMENT}",
        "opening": rf"({_KEY}|{_QUOTED}): +(?=['\"|>])",
        "continued": rf"( +)({_AFTER_SPACE}{_REST}){_COMMENT}\n",
    }[name])


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
    if _CONTROL.search(text) or not (text.isascii() or _printable(text)):
        return None
    unended = not text.endswith("\n")
    reader = _LineReader(resolve, text + "\n" if unended else text, unended=unended)
    try:
        return reader.read()
    except Unusual:  # outside the grammar here, or a value for the node path: events decide
        return None


class _LineReader:
    """One document; ``read`` walks its rows once, ``_items`` takes a sequence in runs.

    ``at`` is the offset of a row's first character, ``line`` its 1-based number.
    """

    def __init__(self, resolve: Resolve, text: str, *, unended: bool = False) -> None:
        self.resolve, self.text = resolve, text
        self.unended = unended
        """The document had no final line break (``text`` has one added)."""
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
        found = _ENTRY.fullmatch(text, at + indent, end) or _rare("entry").fullmatch(
            text, at + indent, end)
        head = found if found is not None else _rare("opening").match(text, at + indent, end)
        if head is None:
            raise Unusual
        raw_key = head[1]
        quoted = raw_key[0] in _NOT_PLAIN
        name = _unquoted(raw_key) if quoted else raw_key
        path = (*top.prefix, name) if top.depth < MAX_KEYPATH else top.prefix
        if path in self.lines:
            raise Unusual  # a repeated key: its items' lines must not be overwritten
        key = name if quoted else self._scalar(raw_key)
        self._visit(top.depth)
        self.lines[path], self.columns[line] = line, indent + 1
        if found is None:  # a value over lines, with escapes, or a block scalar
            from envkit.model._yamltexts import block_scalar, quoted_scalar  # a rare row

            start = head.end()
            read = quoted_scalar if text[start] in _NOT_PLAIN else block_scalar
            top.mapping[key], last = read(text, start, indent)
            if self.unended and last == len(text) - 1 and read is block_scalar:
                raise Unusual  # its last line has no line break to keep: PyYAML's call
            return self._skip_blank(last + 1, line + text.count("\n", end, last) + 1)
        raw_value = found[2]
        if raw_value is not None:
            if raw_value[0] in _NOT_PLAIN:
                top.mapping[key] = self._value(raw_value, line, path, top.depth + 1)
                return self._skip_blank(end + 1, line + 1)
            if found.end(2) == end and text.startswith(" " * (indent + 1), end + 1):
                raw_value, end, line = self._folded(raw_value, end, line, indent)
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
            elif text.startswith(dash, at) and (item := (
                    _ITEM.fullmatch(text, at + len(dash), eol := text.index("\n", at))
                    or _rare("item").fullmatch(text, at + len(dash), eol))):
                raw = item.group(1)
                end, values = eol + 1, [self._scalar(raw) if raw[0] not in _NOT_PLAIN else
                                        self._value(raw, line, (*prefix, len(items))
                                                    if depth < MAX_KEYPATH else prefix,
                                                    depth + 1)]
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

    def _value(self, raw: str, line: int, path: KeyPath, depth: int) -> Any:
        """The value written ``raw`` on ``line`` at ``path`` (``_ANY``): a quoted scalar is a
        string as written, a flow sequence's items are read as plain scalars on that line."""
        first = raw[0]
        if first in "'\"":
            return _unquoted(raw)
        if first == "{":
            return {}
        inner = raw[1:-1].strip(" ")
        values = [self._scalar(item.strip(" ")) for item in inner.split(",")] if inner else []
        self.visits += len(values)
        if self.visits > MAX_NODES or depth >= MAX_DEPTH:
            raise Unusual  # the event reader raises TooLarge with its own message
        if depth < MAX_KEYPATH:
            self.lines.update(((*path, i), line) for i in range(len(values)))
        return values

    def _folded(self, value: str, end: int, line: int, indent: int) -> tuple[str, int, int]:
        """A plain value continued on the lines below it (each more indented than its key,
        none blank or a comment): the lines joined with one space, as a plain scalar folds;
        the end of its last line, and that line's number."""
        text = self.text
        continued = _rare("continued")
        while (more := continued.match(text, end + 1)) is not None and len(more[1]) > indent:
            value = f"{value} {more[2]}"
            end, line = more.end() - 1, line + 1
            if more.end(2) != end:
                break  # a comment ends it
        return value, end, line

    def _scalar(self, value: str) -> Any:
        if value and value[0] not in RESOLVED_FIRST:
            return value
        return self.resolve(value)


def _unquoted(raw: str) -> str:
    """A one-line quoted scalar's value (``'it''s'``, ``"x"`` without escapes)."""
    return raw[1:-1].replace("''", "'") if raw[0] == "'" else raw[1:-1]


def _printable(text: str) -> bool:
    r"""Every character past ASCII is one YAML prints and no line break (``\x85``, ``\u2028``
    and ``\u2029`` are YAML 1.1's; a byte order mark inside a document is libyaml's error)."""
    return all(("\xa0" <= c <= "\ud7ff" and c not in "\u2028\u2029") or c >= "\U00010000"
               or ("\ue000" <= c <= "\ufffd" and c != "\ufeff")
               for c in set(text) if c > "\x7f")


def _indent(text: str, at: int) -> int:
    return _SPACES.match(text, at).end() - at  # type: ignore[union-attr] # " *" always matches


_SPACES = re.compile(" *")
