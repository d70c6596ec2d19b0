"""The result of a validate run over one or many packages, and its versioned JSON form.

``envkit schema diagnostics`` is the JSON Schema of ``ValidationRun.to_dict()``. Version 2.0
added ``packages`` and the ``package`` of every diagnostic (one run may cover a whole tree).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypedDict

from envkit.model.diagnostics import Diagnostic, Severity, rule_url

__all__ = [
    "REPORT_VERSION",
    "Cause",
    "DiagnosticDict",
    "PackageDict",
    "Report",
    "ReportDict",
    "ValidationRun",
    "diagnostic_dict",
    "tally",
]

REPORT_VERSION: Literal["2.0"] = "2.0"


class DiagnosticDict(TypedDict):
    code: str
    severity: str
    package: str | None
    path: str
    line: int | None
    column: int | None
    message: str
    hint: str
    url: str | None


class PackageDict(TypedDict):
    path: str | None
    valid: bool
    format: str | None
    name: str | None
    target: str
    target_source: str
    errors: int
    warnings: int
    notes: list[str]


class ReportDict(TypedDict):
    """``envkit schema diagnostics``."""

    version: Literal["2.0"]
    valid: bool
    format: str | None
    name: str | None
    target: str | None
    packages: list[PackageDict]
    diagnostics: list[DiagnosticDict]


class Cause(NamedTuple):
    """One fact that explains several findings, such as a target the package's ``wheels.lock``
    disagrees with. Why: many findings with their one explanation printed last read as many
    problems; renderers for people print the cause first, its follow-ons collapsed under it.
    """

    text: str
    hint: str
    follow_ons: tuple[int, ...]
    """Indexes into the report's ``diagnostics``, in order."""


def tally(diagnostics: list[Diagnostic]) -> str:
    """``44 EK401, 38 EK408``: how many of each code, in code order."""
    counts = Counter(d.code for d in diagnostics)
    return ", ".join(f"{counts[code]} {code}" for code in sorted(counts))


@dataclass(frozen=True, slots=True)
class Report:
    """One package (with its dataset and job, if any) checked against one target."""

    format: str | None
    name: str | None
    target: str
    diagnostics: tuple[Diagnostic, ...]
    strict: bool = False
    root: str | None = None
    """The package directory as the user named it (``None``: only a dataset or job)."""
    target_source: str = "default"
    """Where the target came from: ``command line``, a config file, ``wheels.lock``, default."""
    notes: tuple[str, ...] = ()
    """Things the user should know that are not rule violations."""
    dataset: str | None = None
    job: str | None = None
    docs_url: str | None = None
    """The rule reference site (``docs-url`` setting) its diagnostics link to; None: no link."""
    causes: tuple[Cause, ...] = ()
    """What explains groups of ``diagnostics``; a cause's text is also one of ``notes``."""

    @property
    def leading(self) -> list[Diagnostic]:
        """The diagnostics no cause explains, in order: those a renderer prints in full."""
        explained = {i for cause in self.causes for i in cause.follow_ons}
        return [d for i, d in enumerate(self.diagnostics) if i not in explained]

    def follow_ons(self, cause: Cause) -> list[Diagnostic]:
        return [self.diagnostics[i] for i in cause.follow_ons]

    @property
    def loose_notes(self) -> list[str]:
        """The notes that are no cause (a cause's text is printed with its cause)."""
        texts = {cause.text for cause in self.causes}
        return [note for note in self.notes if note not in texts]

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
        return ValidationRun((self,)).to_dict()

    def package_dict(self) -> PackageDict:
        return {
            "path": self.root,
            "valid": self.valid,
            "format": self.format,
            "name": self.name,
            "target": self.target,
            "target_source": self.target_source,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class ValidationRun:
    """Every package one ``envkit validate`` call covered: one report, one exit code."""

    reports: tuple[Report, ...]

    @property
    def valid(self) -> bool:
        return all(r.valid for r in self.reports)

    @property
    def exit_code(self) -> int:
        return 0 if self.valid else 1

    def to_dict(self) -> ReportDict:
        one = self.reports[0] if len(self.reports) == 1 else None
        return {
            "version": REPORT_VERSION,
            "valid": self.valid,
            "format": one.format if one else None,
            "name": one.name if one else None,
            "target": one.target if one else None,
            "packages": [r.package_dict() for r in self.reports],
            "diagnostics": [diagnostic_dict(d, r.root, r.docs_url)
                            for r in self.reports for d in r.diagnostics],
        }


def diagnostic_dict(d: Diagnostic, package: str | None,
                    docs_url: str | None = None) -> DiagnosticDict:
    """One diagnostic as JSON; ``package`` is the directory it belongs to (``None``: none),
    ``docs_url`` the rule reference site its ``url`` points into (``None``: no link)."""
    return {
        "code": d.code,
        "severity": d.severity.value,
        "package": package,
        "path": d.path,
        "line": d.line,
        "column": d.column,
        "message": d.message,
        "hint": d.hint,
        "url": rule_url(d.code, docs_url),
    }
