"""1-based columns for diagnostics that name a line of a file the models read.

The checks report a line; editors, annotations and SARIF also want the column, which the
models already hold (YAML documents per line, requirements files as text; dataset rows carry
their own). Why here and not in every check: one pass over the diagnostics that have a line,
instead of threading a column through a hundred call sites. Nothing is read again here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from envkit.model.package import MANIFEST

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from envkit.model.diagnostics import Diagnostic
    from envkit.model.package import Package
    from envkit.validators import Inputs

__all__ = ["with_columns"]


class _Located(Protocol):
    def column_at(self, line: int) -> int | None: ...


class _Text:
    """A text file the model kept whole (a requirements file): the first non-blank column."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines: list[str] | None = None

    def column_at(self, line: int) -> int | None:
        if self._lines is None:
            self._lines = self._text.splitlines()
        if not 1 <= line <= len(self._lines) or not self._lines[line - 1].strip():
            return None
        text = self._lines[line - 1]
        return len(text) - len(text.lstrip()) + 1


def _package_sources(pkg: Package) -> dict[str, _Located]:
    sources: dict[str, _Located] = dict(pkg.configs)
    if pkg.manifest is not None:
        sources[MANIFEST] = pkg.manifest
    for server in pkg.servers:
        for name, text in server.texts.items():
            sources.setdefault(f"{server.path}/{name}", _Text(text))
    return sources


def _sources(inputs: Inputs) -> dict[str, Mapping[str, _Located]]:
    """``input -> path -> what knows the columns`` for each input the run read."""
    found: dict[str, Mapping[str, _Located]] = {}
    if inputs.package is not None:
        found["package"] = _package_sources(inputs.package)
    if inputs.job is not None:
        found["job"] = {inputs.job.path: inputs.job}
    return found


def with_columns(diagnostics: Iterable[Diagnostic], inputs: Inputs) -> tuple[Diagnostic, ...]:
    """``diagnostics`` with ``column`` filled where the line is known and the model that read
    the file recorded a column for it."""
    sources = _sources(inputs)
    out = []
    for d in diagnostics:
        located = sources.get(d.input, {}).get(d.path) if d.line and d.column is None else None
        column = located.column_at(d.line) if located is not None and d.line else None
        out.append(d._replace(column=column) if column is not None else d)
    return tuple(out)
