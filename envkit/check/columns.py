"""1-based columns for diagnostics that name a line of a text file.

The checks report the line of the key or item they are about; editors, GitHub annotations and
SARIF also want the column. It is read back from the file: the first token of the line (the key
of a block mapping, or the item after ``- ``), and for a YAML syntax error the parser's own mark.
Why here and not in every check: one pass over the few diagnostics that have a line, instead of
threading a column through a hundred call sites.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from envkit.model.diagnostics import Diagnostic

__all__ = ["with_columns"]

_FIRST_TOKEN = re.compile(r"[ \t]*(?:-[ \t]+)*")
_YAML_SYNTAX = frozenset({"EK101", "EK300"})
_MAX_BYTES = 8 * 1024 * 1024


def _lines(path: Path, cache: dict[Path, list[str] | None]) -> list[str] | None:
    if path not in cache:
        try:
            if not path.is_file() or path.stat().st_size > _MAX_BYTES:
                cache[path] = None
            else:
                cache[path] = path.read_text("utf-8", errors="replace").splitlines()
        except OSError:
            cache[path] = None
    return cache[path]


def _yaml_error_column(path: Path, line: int) -> int | None:
    import yaml

    try:
        if path.stat().st_size > _MAX_BYTES:
            return None
        # Events only: a syntax error's mark comes from the scanner/parser, and no node is
        # composed or constructed, so alias bombs, huge ints and deep nesting cost nothing.
        for _ in yaml.parse(path.read_text("utf-8"), Loader=yaml.SafeLoader):
            pass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is not None and mark.line + 1 == line:
            return mark.column + 1
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None
    return None


def _column(d: Diagnostic, file: Path, cache: dict[Path, list[str] | None]) -> int | None:
    if d.code in _YAML_SYNTAX and file.suffix in (".yaml", ".yml"):
        found = _yaml_error_column(file, d.line or 0)
        if found is not None:
            return found
    lines = _lines(file, cache)
    if lines is None or d.line is None or not 1 <= d.line <= len(lines):
        return None
    text = lines[d.line - 1]
    if not text.strip():
        return None
    return len(_FIRST_TOKEN.match(text).group(0)) + 1  # type: ignore[union-attr]


def with_columns(diagnostics: Iterable[Diagnostic], bases: dict[str, Path | None]
                 ) -> tuple[Diagnostic, ...]:
    """``diagnostics`` with ``column`` filled where the line is known and the file readable.

    ``bases`` maps a diagnostic's input (``package``, ``dataset``, ``job``) to the directory
    its ``path`` is relative to.
    """
    cache: dict[Path, list[str] | None] = {}
    out = []
    for d in diagnostics:
        base = bases.get(d.input)
        if d.line and d.column is None and d.path and base is not None:
            column = _column(d, base / d.path, cache)
            if column is not None:
                d = d._replace(column=column)
        out.append(d)
    return tuple(out)
