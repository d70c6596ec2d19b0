"""``run_checks``: every finding once, sorted by place, the same order in every process."""

from __future__ import annotations

from envkit.model.diagnostics import Diagnostic, Severity
from envkit.validators import Inputs, run_checks


def _at(path: str, message: str) -> Diagnostic:
    return Diagnostic("EK318", Severity.ERROR, path, 3, message, "hint")


def test_findings_at_one_place_keep_the_order_the_checks_found_them_in() -> None:
    """Two fields missing from one block are two findings at one place: their order came from
    a set, so it changed with the hash seed (two validate runs over the same tree printed
    different reports). Twenty ties make a set's order show with near certainty."""
    messages = [f"field {i:02d} is missing" for i in range(20)]
    found = run_checks(Inputs(), [lambda _: [_at("b.yaml", m) for m in messages],
                                  lambda _: [_at("a.yaml", "first by place")]])
    assert [d.message for d in found] == ["first by place", *messages]


def test_a_finding_two_checks_report_is_reported_once() -> None:
    same = _at("a.yaml", "the same finding")
    assert run_checks(Inputs(), [lambda _: [same], lambda _: [same]]) == [same]
