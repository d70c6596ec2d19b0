"""A validate run as SARIF 2.1.0, the format GitHub code scanning uploads.

Paths are the ones the user gave: relative paths stay relative, so that code scanning resolves
them against the checkout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from envkit import __version__
from envkit.model.diagnostics import Severity, rule_url
from envkit.output.human import diagnostic_path

if TYPE_CHECKING:
    from envkit.model.diagnostics import Diagnostic
    from envkit.validate.report import Report, ValidationRun

__all__ = ["SARIF_SCHEMA", "sarif_log"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    p = Path(path)
    return p.as_uri() if p.is_absolute() else quote(p.as_posix())


def _level(severity: Severity) -> str:
    return "error" if severity is Severity.ERROR else "warning"


def _rule(code: str, index: dict[str, int], rules: list[dict[str, Any]],
          docs_url: str | None) -> int:
    if code not in index:
        from envkit.validators import KNOWN_RULES

        rule = KNOWN_RULES.get(code)
        entry: dict[str, Any] = {"id": code}
        if rule is not None:
            entry.update({
                "shortDescription": {"text": rule.title},
                "fullDescription": {"text": rule.why},
                "help": {"text": rule.fix},
                "defaultConfiguration": {"level": _level(rule.severity)},
            })
        url = rule_url(code, docs_url)
        if url is not None:  # no configured rule reference site: no link (never a dead one)
            entry["helpUri"] = url
        index[code] = len(rules)
        rules.append(entry)
    return index[code]


def _result(report: Report, d: Diagnostic, rule_index: int) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": {"uri": _uri(diagnostic_path(report, d))}}
    if d.line:
        region: dict[str, Any] = {"startLine": d.line}
        if d.column:
            region["startColumn"] = d.column
        location["region"] = region
    return {
        "ruleId": d.code,
        "ruleIndex": rule_index,
        "level": _level(d.severity),
        "message": {"text": f"{d.message} (fix: {d.hint})"},
        "locations": [{"physicalLocation": location}],
        "properties": {"package": report.root, "hint": d.hint},
    }


def sarif_log(run: ValidationRun) -> dict[str, Any]:
    """The SARIF log object of ``run``."""
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results = [_result(r, d, _rule(d.code, index, rules, r.docs_url))
               for r in run.reports for d in r.diagnostics]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "envkit",
                "version": __version__,
                "informationUri": "https://pypi.org/project/nemo-envkit/",
                "rules": rules,
            }},
            "results": results,
            "properties": {"packages": [r.package_dict() for r in run.reports]},
        }],
    }
