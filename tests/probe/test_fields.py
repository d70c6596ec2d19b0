"""Which fields a resources server's `/verify` declares, read from its OpenAPI document, and
which of them could hold a reference the rows do not carry (hand-made documents)."""

from __future__ import annotations

from support.probe_fakes import verify_openapi

from envkit.probe.analysis.fields import DeclaredField, FieldSearch, reference_slots, verify_fields


def test_declared_fields_beyond_the_base_request() -> None:
    doc = verify_openapi(target="", options=[], expected_answer=..., case_sensitive=False)
    doc["components"]["schemas"]["VerifyRequest"]["properties"]["_ng_rollout_id"] = {}
    assert verify_fields(doc) == (
        DeclaredField("target", False, ""), DeclaredField("options", False, []),
        DeclaredField("expected_answer", True), DeclaredField("case_sensitive", False, False))


def test_no_document_no_fields() -> None:
    assert verify_fields({}) == ()
    assert verify_fields({"paths": {"/verify": {"post": {}}}}) == ()


def test_reference_slots_are_required_or_empty_defaults_the_rows_lack() -> None:
    fields = verify_fields(verify_openapi(target="", expected_answers=[], mode="strict",
                                          case_sensitive=False, question=...))
    rows = [{"question": "q1"}, {"question": "q2", "target": "x"}]
    assert [f.name for f in reference_slots(fields, rows)] == ["expected_answers"]
    assert [f.name for f in reference_slots(fields, [{}])] == [
        "target", "expected_answers", "question"]


def test_search_explains_only_with_evidence() -> None:
    assert not FieldSearch().explains and FieldSearch().describe() == ""
    assert FieldSearch(("target", "X")).explains
    missing = FieldSearch(None, (DeclaredField("target", False, ""),))
    assert missing.explains and "declares `target` (default '')" in missing.describe()
