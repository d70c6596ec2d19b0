"""What the two halves of ``envkit.model.yamlio`` (events, nodes) share: the parsed document
(``YamlDoc``), the bounds, the key-path type and the two signals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_DEPTH", "MAX_KEYPATH", "MAX_NODES", "KeyPath", "TooLarge", "Unusual", "YamlDoc",
    "nesting_clear",
]

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


_INDICATORS = (b"[", b"{", b"-", b"?", b":")
_SAFE_INDICATORS = 5_000
"""Every nesting level needs one of ``_INDICATORS``; libyaml's composer recurses in C and
overflows an 8 MiB stack (a segfault, not an exception) somewhere between 20,000 and 50,000
levels, so fewer indicators than this cannot crash it even on a smaller thread stack."""
_SEPARATORS = (b",", b"\n")
"""Two nodes of one collection are apart by one of these or an indicator, so their count
bounds the nodes a document can compose to (aliases aside: those are bounded by the walk)."""


def nesting_clear(raw: bytes) -> bool:
    """True when counting bytes shows the document can neither nest too deeply nor hold more
    nodes than the walk would visit (nearly every file); else ``yamlio`` checks the events
    before anything recursive sees them."""
    if len(raw) <= _SAFE_INDICATORS:
        return True
    indicators = sum(map(raw.count, _INDICATORS))
    nodes = indicators + sum(map(raw.count, _SEPARATORS))
    return indicators <= _SAFE_INDICATORS and nodes <= MAX_NODES


@dataclass(frozen=True, slots=True)
class YamlDoc:
    """One parsed YAML file. ``data`` is None when ``error`` says why it could not be read."""

    path: str
    data: Any = None
    error: str | None = None
    error_line: int | None = None
    lines: Mapping[KeyPath, int] = field(default_factory=dict)
    error_column: int | None = None
    """1-based column of ``error_line`` where the parser stopped (syntax errors only)."""
    columns: Mapping[int, int] = field(default_factory=dict)
    """``line -> column`` (both 1-based) of the first key or item that starts on the line."""

    @property
    def ok(self) -> bool:
        return self.error is None

    def column_at(self, line: int) -> int | None:
        """The column a diagnostic on ``line`` points at: the parser's for the syntax error,
        else the first key or item of the line; None for a line no node starts on."""
        if self.error_column is not None and line == self.error_line:
            return self.error_column
        return self.columns.get(line)

    def line_of(self, *keypath: str | int) -> int | None:
        """Line of the deepest recorded prefix of ``keypath`` (1-based), or None."""
        path: KeyPath = tuple(keypath)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)
