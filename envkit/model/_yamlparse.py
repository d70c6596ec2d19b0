"""The PyYAML half of ``envkit.model.yamlio``: every document the line reader leaves, and every
error, with the parser's own line and column.

``parse_text`` reads the document line by line when its lines are that simple but a value
needs PyYAML's resolvers, from the parser's events when it is plain (nearly every config),
else through the node tree (anchors, aliases, tags, merge keys); it refuses nesting and node
counts past the bounds before anything recursive sees them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import yaml

from envkit.model._yamlcore import MAX_DEPTH, MAX_NODES, TooLarge, Unusual, YamlDoc, nesting_clear
from envkit.model._yamlevents import read_events, resolve_scalar
from envkit.model._yamllines import read_lines
from envkit.model._yamlnodes import BaseLoader, Loader, construct, record_lines

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["parse_text"]


def parse_text(path: str, raw: bytes, text: str, *, try_lines: bool = True) -> YamlDoc:
    """``raw`` (decoded: ``text``) as one YAML document; never raises over the content.

    ``try_lines``: read it line by line first (with PyYAML's resolvers) if its lines allow;
    False when the line reader already found they do not.
    """
    try:
        _check_nesting(raw, text)
        return _compose(path, text, try_lines=try_lines)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return YamlDoc(path, error=f"invalid YAML: {exc.problem or exc}",
                       error_line=mark.line + 1 if mark is not None else None,
                       error_column=mark.column + 1 if mark is not None else None)
    except yaml.reader.ReaderError as exc:
        return _unprintable(path, text, exc)
    except yaml.YAMLError as exc:
        return YamlDoc(path, error=f"invalid YAML: {exc}")
    except TooLarge as exc:
        return YamlDoc(path, error=str(exc))
    except RecursionError:
        return YamlDoc(path, error="invalid YAML: nested too deeply")
    except (ValueError, OverflowError) as exc:  # pure-Python scanner: chr() of "\U00110000"
        return YamlDoc(path, error=f"invalid YAML: {exc}")


def _compose(path: str, text: str, *, try_lines: bool = True) -> YamlDoc:
    """Read the document line by line when its lines are that simple (``_yamllines``), from
    the events when it is plain (nearly every config), else through the node tree (anchors,
    aliases, tags, merge keys).

    :raises yaml.YAMLError, TooLarge, RecursionError: see ``parse_yaml``.
    """
    loader = Loader(text)  # the pure-Python reader already checks characters here
    try:
        read = read_lines(lambda value: resolve_scalar(loader, value, (True, False), None),
                          text) if try_lines else None
        data, lines, columns = read if read is not None else read_events(loader)
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
        data = construct(loader, node)
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

def _check_nesting(raw: bytes, text: str) -> None:
    """Refuse nesting past ``MAX_DEPTH``, and more nodes than the walk would visit, before
    anything recursive (or costly per node: the composer resolves every scalar) sees them.

    A count of indicator and separator bytes (``nesting_clear``) clears nearly every file; the
    rest get one pass over the parser's events (iterative, no node tree) that stops at the
    first level too deep, or once there are more nodes than the walk would visit anyway (keys
    are not visited: twice).

    :raises TooLarge: nested too deeply, or too many nodes.
    :raises yaml.YAMLError: not YAML (reported the same as when composing).
    """
    if nesting_clear(raw):
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


