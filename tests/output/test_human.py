"""Human output shows severity (``error[EK105]`` / ``warning[EK113]``, coloured only on a
terminal), ``envkit rule`` says when each severity of a rule applies, and the report a command
prints is built whole where it is made."""

from __future__ import annotations

import functools
import io
import json
import re
from pathlib import Path

import pytest
from support.paths import FIXTURES, REPO_ROOT

from envkit.cli import main
from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.target import Target
from envkit.output import human
from envkit.output.human import Console, render_human
from envkit.validate.report import Report, ValidationRun
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import RULES, CheckOptions, Rule

CASES = FIXTURES / "packages"
ERROR = Diagnostic("EK105", Severity.ERROR, "nemo-environment.yaml", 3, "escapes the root", "fix")
WARNING = Diagnostic("EK113", Severity.WARNING, "nemo-environment.yaml", 4, "listed twice", "fix")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _human(report: Report, file: io.StringIO, *, color: bool | None = None) -> list[str]:
    render_human(ValidationRun((report,)), Console(file, color=color))
    return file.getvalue().splitlines()


REPORT = Report("native-v1", "x", "cp313", (ERROR, WARNING), root="pkg")


def test_an_error_line_and_a_warning_line_look_different_without_colour() -> None:
    lines = _human(REPORT, io.StringIO())
    assert lines[0] == "pkg/nemo-environment.yaml:3: error[EK105] escapes the root"
    assert lines[2] == "pkg/nemo-environment.yaml:4: warning[EK113] listed twice"
    assert "\x1b" not in "\n".join(lines)


def test_colour_only_on_a_terminal_and_by_severity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    lines = _human(REPORT, _Terminal())
    assert "\x1b[31;1merror[EK105]\x1b[0m" in lines[0]
    assert "\x1b[33;1mwarning[EK113]\x1b[0m" in lines[2]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b" not in "\n".join(_human(REPORT, _Terminal()))


def test_brackets_in_a_message_are_not_markup() -> None:
    diag = ERROR._replace(message="`[tool]` is [red]not[/] markup")
    lines = _human(Report("native-v1", "x", "cp313", (diag,), root="pkg"), _Terminal(),
                   color=True)
    assert "`[tool]` is [red]not[/] markup" in lines[0]


def test_validate_prints_the_severity_of_each_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(CASES / "EK113-duplicate-config-path" / "pkg")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\S+: warning\[EK113\] ", out, re.MULTILINE), out


def test_rule_ek403_says_when_each_severity_applies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "EK403"]) == 0
    out = capsys.readouterr().out
    assert "Severity:\n- error with `--offline`" in out
    assert "\n- warning otherwise" in out
    assert main(["rule", "EK105"]) == 0
    assert "\nSeverity: error\n" in capsys.readouterr().out
    assert main(["rule", "EK40"]) == 0
    listing = capsys.readouterr().out
    assert re.search(r"^EK403  error/warning  ", listing, re.MULTILINE)
    assert re.search(r"^EK401  error          ", listing, re.MULTILINE)
    assert main(["rule", "EK403", "--output-format", "json"]) == 0
    (rule,) = json.loads(capsys.readouterr().out)["rules"]
    assert [s["severity"] for s in rule["severities"]] == ["error", "warning"]


def test_a_rule_states_when_its_default_severity_applies() -> None:
    with pytest.raises(ValueError, match="default error"):
        Rule("EK999", Severity.ERROR, "t", "w", "f", when=((Severity.WARNING, "sometimes"),))
    assert RULES["EK105"].severities == ((Severity.ERROR, None),)


@functools.cache
def _fixture_findings() -> frozenset[tuple[str, Severity]]:
    found = set()
    for case in sorted(p.parent for p in CASES.glob("*/case.json")):
        spec = json.loads((case / "case.json").read_text())
        if spec.get("setup"):
            continue  # built at test time (tests/validators/test_fixture_cases.py)
        arch = spec.get("options", {}).get("arch", "x86_64")
        for offline in (False, True):
            report = validate(ValidateRequest(
                package=case / spec["package"] if spec.get("package") else None,
                dataset=case / spec["dataset"] if spec.get("dataset") else None,
                job=case / spec["job"] if spec.get("job") else None,
                options=CheckOptions(target=Target(arch=arch), offline=offline)))
            found |= {(d.code, d.severity) for d in report.diagnostics}
    return frozenset(found)


def test_every_severity_a_fixture_shows_is_one_its_rule_states() -> None:
    """``envkit rule`` must not say "error" of a rule that validate reports as a warning."""
    unstated = sorted((code, sev.value) for code, sev in _fixture_findings()
                      if sev not in {s for s, _ in RULES[code].severities})
    assert not unstated
    assert ("EK403", Severity.WARNING) in _fixture_findings()  # the case the rule docs missed


def test_one_name_per_meaning_of_display_path() -> None:
    from envkit.model import package

    assert not hasattr(human, "display_path")  # human.diagnostic_path: where to open the file
    assert package.display_path("a\nb") == "a\\x0ab"  # package.display_path: printable text


def test_validate_builds_the_report_whole(tmp_path: Path) -> None:
    staged = CASES / "valid-native-v1" / "pkg"
    report = validate(ValidateRequest(package=staged, package_as=tmp_path / "final",
                                      target_source="envkit.toml", notes=("a note",)))
    assert (report.root, report.target_source, report.notes) == (
        str(tmp_path / "final"), "envkit.toml", ("a note",))


def test_no_report_is_completed_after_it_is_made() -> None:
    places = [REPO_ROOT / "envkit" / "validate" / "gate.py", REPO_ROOT / "envkit" / "output" /
              "render.py", REPO_ROOT / "envkit" / "cli" / "convert_verifiers.py"]
    for path in places:
        assert not re.search(r"replace\((result\.)?report\b", path.read_text()), path


def _reported_at_another_severity() -> set[str]:
    """Codes whose check passes a severity (``EK403.at(..., severity=...)``) or marks a
    finding a warning (``Finding(EK602, ..., warning=True)``): read from the checks' source,
    so a case no fixture covers is found too."""
    import ast

    codes = set()
    for path in (REPO_ROOT / "validators").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            keywords = {k.arg: k.value for k in node.keywords}
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr == "at"
                    and isinstance(func.value, ast.Name) and func.value.id in RULES
                    and "severity" in keywords):
                codes.add(func.value.id)
            elif (isinstance(func, ast.Name) and func.id == "Finding" and node.args
                  and isinstance(node.args[0], ast.Name) and "warning" in keywords):
                codes.add(node.args[0].id)
    return codes


def test_every_rule_a_check_reports_at_another_severity_says_when() -> None:
    codes = _reported_at_another_severity()
    assert {"EK403", "EK602", "EK301"} <= codes  # the scan sees both forms
    assert not sorted(code for code in codes if not RULES[code].when)
