"""Read YAML the way a validator needs it: safely, bounded, and with line numbers.

A validator must survive anything in a config without executing tags, expanding alias bombs,
or blowing the stack, and must point at the line of the key that is wrong. PyYAML's objects
carry no marks, so positions are recorded beside the data (``key path -> line`` and each
line's first column) while reading; a syntax error keeps the parser's line and column.

One reader, PyYAML's safe loader (libyaml's where present), because Gym reads these files with
PyYAML. A plain document is read from the parser's events (``_yamlevents``); one with anchors,
aliases, explicit tags or merge keys through the node tree (``_yamlnodes``). Nesting and node
counts past the bounds are refused before anything recursive sees them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from envkit.errors import InvalidError
from envkit.model._yamlevents import read_events
from envkit.model._yamlnodes import (
    MAX_DEPTH,
    MAX_NODES,
    BaseLoader,
    KeyPath,
    Loader,
    TooLarge,
    Unusual,
    record_lines,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = ["MAX_YAML_BYTES", "KeyPath", "YamlDoc", "YamlReadError", "parse_yaml", "read_mapping"]

MAX_YAML_BYTES = 8 * 1024 * 1024
"""Gym configs are a few KiB; anything past this is not a config and is not parsed."""


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
        column = exc.start - raw.rfind(b"\n", 0, exc.start)
        return YamlDoc(path, error=f"not UTF-8 (byte 0x{raw[exc.start]:02x})", error_line=line,
                       error_column=column)
    try:
        _check_nesting(raw, text)
        return _compose(path, text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return YamlDoc(path, error=f"invalid YAML: {exc.problem or exc}",
                       error_line=mark.line + 1 if mark is not None else None,
                       error_column=mark.column + 1 if mark is not None else None)
    except yaml.reader.ReaderError as exc:
        return _unprintable(path, text, exc)
    # ValueError, OverflowError: the pure-Python scanner's chr() of "\U00110000"
    except (yaml.YAMLError, ValueError, OverflowError) as exc:
        return YamlDoc(path, error=f"invalid YAML: {exc}")
    except TooLarge as exc:
        return YamlDoc(path, error=str(exc))
    except RecursionError:
        return YamlDoc(path, error="invalid YAML: nested too deeply")


def _compose(path: str, text: str) -> YamlDoc:
    """Read the document from the events when it is plain (nearly every config), else through
    the node tree (anchors, aliases, tags, merge keys).

    :raises yaml.YAMLError, TooLarge, RecursionError: see ``parse_yaml``.
    """
    loader = Loader(text)  # the pure-Python reader already checks characters here
    try:
        data, lines, columns = read_events(loader)
    except Unusual:
        pass
    else:
        return YamlDoc(path, data=data, lines=lines, columns=columns)
    finally:
        loader.dispose()
    return _compose_nodes(path, text)


def _compose_nodes(path: str, text: str) -> YamlDoc:
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return YamlDoc(path, data=None, lines={(): 1})
        lines, columns = record_lines(node)
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    return YamlDoc(path, data=data, lines=lines, columns=columns)


_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE


def _unprintable(path: str, text: str, exc: yaml.reader.ReaderError) -> YamlDoc:
    """A character YAML does not allow (a control character, a lone surrogate).

    ``ReaderError`` is not a ``MarkedYAMLError``: it carries an offset that libyaml counts in
    UTF-8 bytes and PyYAML in characters, so the character is found again here (the same
    pattern PyYAML's reader uses) and its line and column come from the text itself.
    """
    found = _NON_PRINTABLE.search(text)
    if found is None:  # pragma: no cover - the reader and the pattern agree
        return YamlDoc(path, error=f"invalid YAML: {exc.reason}")
    start = found.start()
    line = text.count("\n", 0, start) + 1
    column = start - text.rfind("\n", 0, start)
    message = f"invalid YAML: character {found.group()!r} is not allowed ({exc.reason})"
    return YamlDoc(path, error=message, error_line=line, error_column=column)


_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
_INDICATORS = (b"[", b"{", b"-", b"?", b":")
_SAFE_INDICATORS = 5_000
"""Every nesting level needs one of ``_INDICATORS``; libyaml's composer recurses in C and
overflows an 8 MiB stack (a segfault, not an exception) somewhere between 20,000 and 50,000
levels, so fewer indicators than this cannot crash it even on a smaller thread stack."""
_SEPARATORS = (b",", b"\n")
"""Two nodes of one collection are apart by one of these or an indicator, so their count
bounds the nodes a document can compose to (aliases aside: those are bounded by the walk)."""


def _nesting_clear(raw: bytes) -> bool:
    """True when counting bytes shows the document can neither nest too deeply nor hold more
    nodes than the walk would visit (nearly every file)."""
    if len(raw) <= _SAFE_INDICATORS:
        return True
    indicators = sum(map(raw.count, _INDICATORS))
    nodes = indicators + sum(map(raw.count, _SEPARATORS))
    return indicators <= _SAFE_INDICATORS and nodes <= MAX_NODES


def _check_nesting(raw: bytes, text: str) -> None:
    """Refuse nesting past ``MAX_DEPTH``, and more nodes than the walk would visit, before
    anything recursive (or costly per node) sees them: what ``_nesting_clear`` does not clear
    gets one iterative pass over the parser's events (keys are not visited: twice the nodes).

    :raises TooLarge: nested too deeply, or too many nodes.
    :raises yaml.YAMLError: not YAML (reported the same as when composing).
    """
    if _nesting_clear(raw):
        return
    loader = BaseLoader(text)
    try:
        depth = events = 0
        get_event: Callable[[], yaml.Event] = loader.get_event  # untyped in PyYAML's stubs
        while loader.check_event():
            event = get_event()
            events += 1
            if events > 2 * MAX_NODES:
                msg = f"document has more than {2 * MAX_NODES:,} nodes; not parsed"
                raise TooLarge(msg)
            if isinstance(event, _OPEN):
                depth += 1
                if depth > MAX_DEPTH:
                    msg = f"nested more than {MAX_DEPTH} levels deep; not parsed"
                    raise TooLarge(msg)
            elif isinstance(event, _CLOSE):
                depth -= 1
    finally:
        loader.dispose()


class YamlReadError(InvalidError, ValueError):
    """A YAML file that cannot be read as a mapping; the message names the file and line."""


def read_mapping(path: Path, display: str | None = None) -> dict[str, Any]:
    """``path`` parsed as a top-level mapping, within the same bounds as ``envkit validate``:
    an alias bomb must fail the same bounded way in the builder, converter and runtime.

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
