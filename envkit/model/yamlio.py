"""Read YAML the way a validator needs it: safely, bounded, and with line numbers.

Gym configs come from users and from converters; a validator must survive anything in them
without executing tags, expanding alias bombs, or blowing the stack, and it must be able to
point at the line of the key that is wrong. PyYAML's constructed objects carry no marks, so
the node tree is walked once to record ``key path -> line`` (and each line's first column)
beside the data; a syntax error keeps the parser's own line and column. Nothing downstream
parses the file again to find a position.

Configs written in block style (mappings and sequences of plain, quoted and block scalars, the
forms configs use) are read here without importing PyYAML (``_yamllines`` with
``_yamlscalars`` and ``_yamltexts``): every config of Gym's 145 servers is; every other
document, and every error, is PyYAML's (``_yamlparse``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envkit.errors import InvalidError
from envkit.model._yamlcore import KeyPath, Unusual, YamlDoc, nesting_clear
from envkit.model._yamllines import read_lines
from envkit.model._yamlscalars import plain_value

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["MAX_YAML_BYTES", "KeyPath", "YamlDoc", "YamlReadError", "parse_yaml", "read_mapping"]

MAX_YAML_BYTES = 8 * 1024 * 1024
"""Gym configs are a few KiB; anything past this is not a config and is not parsed."""


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
    value_stopped = True  # not tried yet: _yamlparse tries the line reader itself
    if nesting_clear(raw):
        read, value_stopped = _read_plain(text)
        if read is not None:
            data, lines, columns = read
            return YamlDoc(path, data=data, lines=lines, columns=columns)
    from envkit.model._yamlparse import parse_text

    return parse_text(path, raw, text, try_lines=value_stopped)


def _read_plain(text: str) -> tuple[tuple[Any, dict[KeyPath, int], dict[int, int]] | None, bool]:
    """The line reader without PyYAML, and whether a value only PyYAML decides stopped it (then
    the line reader is worth a second try with PyYAML's resolvers; else the grammar stopped it,
    and it would stop there again)."""
    stopped = False

    def resolve(value: str) -> Any:
        nonlocal stopped
        try:
            return plain_value(value)
        except Unusual:
            stopped = True
            raise

    return read_lines(resolve, text), stopped


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
