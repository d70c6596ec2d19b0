"""The result of one validate run, and its versioned JSON form (``envkit schema diagnostics``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from envkit.diagnostics import Diagnostic, Severity

__all__ = ["REPORT_VERSION", "DiagnosticDict", "Report", "ReportDict"]

REPORT_VERSION = "1.0"


class DiagnosticDict(TypedDict):
    code: str
    severity: str
    path: str
    line: int | None
    column: int | None
    message: str
    hint: str
    url: str


class ReportDict(TypedDict):
    version: str
    valid: bool
    format: str | None
    name: str | None
    target: str
    diagnostics: list[DiagnosticDict]


@dataclass(frozen=True)
class Report:
    format: str | None
    name: str | None
    target: str
    diagnostics: tuple[Diagnostic, ...]
    strict: bool = False

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.WARNING]

    @property
    def valid(self) -> bool:
        """Warnings never fail a package unless ``--strict``."""
        return not (self.errors or (self.strict and self.warnings))

    def to_dict(self) -> ReportDict:
        return {
            "version": REPORT_VERSION,
            "valid": self.valid,
            "format": self.format,
            "name": self.name,
            "target": self.target,
            "diagnostics": [_diag_dict(d) for d in self.diagnostics],
        }


def _diag_dict(d: Diagnostic) -> DiagnosticDict:
    return {
        "code": d.code,
        "severity": d.severity.value,
        "path": d.path,
        "line": d.line,
        "column": d.column,
        "message": d.message,
        "hint": d.hint,
        "url": d.url,
    }
