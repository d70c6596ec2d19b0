"""The scalars of ``envkit.model._yamllines`` that are text rather than a plain value: quoted
ones, on one line or folded over several, and block ones (``|``, ``>``).

Why: a config's prompt templates and descriptions are written this way (a judge prompt in
single quotes over twenty lines, a description with ``\\u2014`` in double quotes, a system
message after ``>-``), and one such value in a tree sent every package of its process through
PyYAML, whose import alone costs about what validating a small package does. Each reader here
takes the forms configs use and raises ``Unusual`` for anything else (an escape it does not
know, a continuation line at or left of its key, a block header with an indentation digit,
a more-indented line in a folded block), so the event reader decides those, errors included.
Folding is YAML 1.1's, as libyaml does it: a line break between two lines of text is one space,
blank lines between them are that many line feeds, the spaces around a break are dropped.
"""

from __future__ import annotations

import re

from envkit.model._yamlcore import Unusual

__all__ = ["block_scalar", "quoted_scalar"]

_TAIL = re.compile(r"(?: +#[^\x00-\x1f\x7f]*)?\n")
"""What may follow a scalar on its last line: a comment after a space."""
_SINGLE_RUN = re.compile(r"[^'\n]*")
_DOUBLE_RUN = re.compile(r'[^"\\\n]*')
_SPACES = re.compile(" *")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "n": "\n", "t": "\t", " ": " "}
"""Double-quoted escapes taken here; ``\\u`` too (below); any other goes to PyYAML."""
_HEX4 = re.compile("[0-9A-Fa-f]{4}")
_HEADER = re.compile(r"([|>])(-?)\n")
"""A block scalar's header this reader takes: clip or strip chomping, no indentation digit,
no comment."""


def quoted_scalar(text: str, at: int, indent: int) -> tuple[str, int]:
    """The quoted scalar opening at ``text[at]``, continued on lines indented more than
    ``indent``: ``(value, offset of the line feed that ends its last line)``."""
    if text[at] == "'":
        value, end = _single(text, at + 1, indent)
    else:
        value, end = _double(text, at + 1, indent)
    tail = _TAIL.match(text, end)
    if tail is None:
        raise Unusual  # more after the closing quote: an error, or a key
    return value, tail.end() - 1


def _single(text: str, at: int, indent: int) -> tuple[str, int]:
    """A single-quoted scalar's text from ``at`` (``''`` is a quote, nothing else escapes):
    ``(value, offset after the closing quote)``."""
    pieces: list[str] = []
    while True:
        run = _SINGLE_RUN.match(text, at)
        end = run.end()  # type: ignore[union-attr] # a star pattern always matches
        stop = text[end:end + 1]
        if stop == "'":
            if text.startswith("''", end):
                pieces.append(text[at:end + 1])
                at = end + 2
                continue
            pieces.append(text[at:end])
            return "".join(pieces), end + 1
        if stop != "\n":
            raise Unusual  # no closing quote
        pieces.append(text[at:end].rstrip(" "))
        at = _fold(text, end, indent, pieces)


def _double(text: str, at: int, indent: int) -> tuple[str, int]:
    """A double-quoted scalar's text from ``at`` (backslash escapes, ``_escape``): ``(value,
    offset after the closing quote)``."""
    pieces: list[str] = []
    while True:
        run = _DOUBLE_RUN.match(text, at)
        end = run.end()  # type: ignore[union-attr] # a star pattern always matches
        stop = text[end:end + 1]
        if stop == '"':
            pieces.append(text[at:end])
            return "".join(pieces), end + 1
        if stop == "\n":
            pieces.append(text[at:end].rstrip(" "))
            at = _fold(text, end, indent, pieces)
            continue
        if stop != "\\":
            raise Unusual  # no closing quote
        pieces.append(text[at:end])
        at = _escape(text, end + 1, indent, pieces)


def _escape(text: str, at: int, indent: int, pieces: list[str]) -> int:
    """The escape after a backslash at ``at - 1``; where the text goes on."""
    code = text[at:at + 1]
    if code in _ESCAPES:
        pieces.append(_ESCAPES[code])
        return at + 1
    if code == "u" and _HEX4.fullmatch(text, at + 1, at + 5):
        point = int(text[at + 1:at + 5], 16)
        if 0xD800 <= point <= 0xDFFF or point < 0x20:
            raise Unusual  # a surrogate or a control character: PyYAML's call
        pieces.append(chr(point))
        return at + 5
    if code == "\n":  # an escaped line break: the lines join with nothing between
        start = _continuation(text, at + 1, indent)
        if start is None:
            raise Unusual  # a blank line after it
        return start
    raise Unusual


def _fold(text: str, end: int, indent: int, pieces: list[str]) -> int:
    """Fold the line break at ``end`` and the blank lines after it into ``pieces``; where the
    next line's text starts."""
    breaks, at = 0, end + 1
    while (start := _continuation(text, at, indent)) is None:
        breaks += 1
        at = text.find("\n", at) + 1
        if not at:
            raise Unusual  # the document ends inside the quotes
    pieces.append("\n" * breaks if breaks else " ")
    return start


def _continuation(text: str, at: int, indent: int) -> int | None:
    """Where the text of the line at ``at`` starts, or None when the line is blank.

    :raises Unusual: the line is not indented more than ``indent`` (the key's).
    """
    spaces = _SPACES.match(text, at).end()  # type: ignore[union-attr] # always matches
    if text[spaces:spaces + 1] in ("\n", ""):
        return None
    if spaces - at <= indent:
        raise Unusual  # libyaml and the spec differ on these; PyYAML decides
    return spaces


def block_scalar(text: str, at: int, indent: int) -> tuple[str, int]:
    """The block scalar whose header (``|``, ``|-``, ``>``, ``>-``) is at ``text[at]``, its
    lines indented more than ``indent``: ``(value, offset of the line feed that ends its last
    line)``."""
    header = _HEADER.match(text, at)
    if header is None:
        raise Unusual  # keep chomping, an indentation digit, a comment
    literal, strip = header[1] == "|", header[2] == "-"
    lines: list[str] = []
    width, at, end = 0, header.end(), header.end() - 1
    while at < len(text):
        eol = text.index("\n", at)
        spaces = _SPACES.match(text, at, eol).end() - at  # type: ignore[union-attr]
        if at + spaces == eol:  # blank
            if spaces and (not width or spaces > width):
                raise Unusual  # spaces past the indentation are text; before it, PyYAML's
            lines.append("")
        elif not width:
            if spaces <= indent:
                raise Unusual  # an empty block scalar
            width = spaces
            lines.append(text[at + spaces:eol])
        elif spaces < width:
            break
        elif spaces > width and not literal:
            raise Unusual  # a more-indented line of a folded block keeps its breaks
        else:
            lines.append(text[at + width:eol])
        at = eol + 1
        if lines[-1]:
            end = eol
    while lines and not lines[-1]:
        lines.pop()
    if not lines or lines[0] == "":
        raise Unusual  # empty, or blank lines before the text
    body = "\n".join(lines) if literal else _folded_lines(lines)
    return body if strip else body + "\n", end


def _folded_lines(lines: list[str]) -> str:
    """Lines of a folded block (none more indented): one space between two lines of text,
    a line feed per blank line between them."""
    out = [lines[0]]
    breaks = 0
    for line in lines[1:]:
        if not line:
            breaks += 1
            continue
        out.append("\n" * breaks if breaks else " ")
        out.append(line)
        breaks = 0
    return "".join(out)
