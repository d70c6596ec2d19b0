"""The one shape every finding takes, from the manifest checks to the wheel closure.

Shaped like flake8's ``Violation`` (code, file, line, column, text) plus the fix hint and URL
that ruff's JSON output carries, so editors and CI annotations can consume it unchanged.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

__all__ = ["Diagnostic", "Severity", "selected"]

DOCS_URL = "https://envkit.readthedocs.io/en/latest/rules/{code}.html"


class Severity(str, enum.Enum):  # noqa: UP042 - str mixin: JSON-serialisable, py3.11 floor
    ERROR = "error"
    WARNING = "warning"


class Diagnostic(NamedTuple):
    """One violation: where it is, what is wrong, and how to fix it."""

    code: str
    severity: Severity
    path: str
    """Path relative to the package (or dataset/job) root, POSIX separators; "" for the root."""
    line: int | None
    message: str
    hint: str
    column: int | None = None

    @property
    def input(self) -> str:
        """Which input ``path`` is relative to: EK5xx name dataset files, EK6xx the job file."""
        if self.code.startswith("EK5"):
            return "dataset"
        if self.code.startswith("EK6"):
            return "job"
        return "package"

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line or 0, self.column or 0, self.code)


def selected(code: str, select: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    """Prefix matching as ruff and flake8 do it: ``EK1`` selects every manifest rule.

    >>> selected("EK105", ("EK1",), ())
    True
    >>> selected("EK105", (), ("EK10",))
    False
    """
    if select and not code.startswith(select):
        return False
    return not (ignore and code.startswith(ignore))
