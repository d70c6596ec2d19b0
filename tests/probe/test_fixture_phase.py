"""The verifier-fixture phase without a server venv: which servers ship a fixture, where the
cases are read from, Gym's per-case rules (the runner's, against a stand-in for Gym's
``_observe``), and how a failing case becomes an EK809 in JSON and in the human table. The
runner in a real server venv, and against ``gym env test``: test_fixture_phase_gym.py."""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
from support.paths import REPO_ROOT

from envkit.model.package import load_package
from envkit.output import render
from envkit.probe import ProbeOutcome, ProbeReport
from envkit.probe.phases import fixture_runner as runner
from envkit.probe.phases.fixtures import FixturesResult, _parse, fixture_servers
from envkit.schemas import load_schema

PKG = REPO_ROOT / "fixtures" / "probe" / "fixture_fails" / "pkg"
CASES = "resources_servers/reverse_word/tests/verifier_cases.ndjson"


class _FixtureError(ValueError):
    pass


@dataclass
class _Case:
    name: str
    kind: str
    expected_reward: float | None = None
    expected_error: str | None = None


def _gym(rewards: list[float] | None = None, error: Exception | None = None) -> Any:
    """A stand-in for ``nemo_gym.verifier_fixture``: ``_observe`` returns ``rewards`` in turn
    (or raises ``error``)."""
    seen = list(rewards or [])

    async def observe(fixture: object, case: object, **kw: object) -> float:
        if error is not None:
            raise error
        return seen.pop(0)
    return SimpleNamespace(_observe=observe, VerifierFixtureError=_FixtureError)


def _one(case: _Case, gym: Any, scale: tuple[float, float, bool] = (0.0, 1.0, True),
         seeded: bool = False) -> dict[str, Any]:
    return asyncio.run(runner._case(None, case, scale, seeded, gym))


def test_only_servers_whose_entrypoint_names_the_fixture(tmp_path: Path) -> None:
    assert fixture_servers(load_package(PKG)) == [
        ("reverse_word", "resources_servers/reverse_word/app.py")]
    copy = tmp_path / "pkg"
    shutil.copytree(PKG, copy)
    app = copy / "resources_servers/reverse_word/app.py"
    app.write_text(app.read_text().replace("VERIFIER_FIXTURE", "FIXTURE"))
    assert fixture_servers(load_package(copy)) == []


def test_cases_are_read_from_the_package_its_ndjson_twin_or_the_dataset(tmp_path: Path) -> None:
    pkg, data = tmp_path / "pkg", tmp_path / "data"
    named = pkg / "s" / "tests" / "verifier_cases.jsonl"
    assert runner._cases_path(named, pkg, str(data)) is None
    moved = data / "s" / "tests" / "verifier_cases.jsonl"
    moved.parent.mkdir(parents=True)
    moved.write_text("{}\n")
    assert runner._cases_path(named, pkg, str(data)) == moved  # where envkit build moved it
    twin = named.with_suffix(".ndjson")
    twin.parent.mkdir(parents=True)
    twin.write_text("{}\n")
    assert runner._cases_path(named, pkg, str(data)) == twin
    named.write_text("{}\n")
    assert runner._cases_path(named, pkg, None) == named


def test_full_and_zero_cases_must_pin_the_ends_and_match_their_expectation() -> None:
    assert _one(_Case("a", "full_reward", 1.0), _gym([1.0]))["passed"] is True
    full = _one(_Case("a", "full_reward", 1.0), _gym([0.94]))
    assert full["passed"] is False and full["observed"] == [0.94]
    assert "best reward 1.0" in full["message"]
    assert _one(_Case("z", "zero_reward", 0.0), _gym([1.0]))["passed"] is False
    # lower is better: a full case pins the lower end
    assert _one(_Case("a", "full_reward", 0.0), _gym([0.0]), (0.0, 1.0, False))["passed"]
    out = _one(_Case("o", "zero_reward", 2.0), _gym([2.0]), (0.0, 1.0, True))
    assert out["passed"] is False and "outside the declared range" in out["message"]


def test_a_malformed_case_must_raise_the_expected_error() -> None:
    case = _Case("m", "malformed", expected_error="response")
    assert _one(case, _gym(error=KeyError("response missing")))["passed"] is True
    assert _one(case, _gym(error=KeyError("other")))["passed"] is False
    assert "did not raise" in _one(case, _gym([0.0]))["message"]


def test_determinism_cases_run_only_when_seeded() -> None:
    case = _Case("d", "determinism", 0.5)
    skipped = _one(case, _gym([0.5, 0.5]))
    assert skipped["passed"] is None and "seeded" in skipped["message"]
    assert _one(case, _gym([0.5, 0.5]), seeded=True)["passed"] is True
    changed = _one(case, _gym([0.5, 0.7]), seeded=True)
    assert changed["passed"] is False and changed["observed"] == [0.5, 0.7]


def _result(cases: list[dict[str, Any]], gym_ok: bool = False, status: str = "ran",
            message: str | None = None) -> FixturesResult:
    data = {"status": status, "message": message, "fixture_path": str(PKG / CASES),
            "gym": {"ok": gym_ok, "error": "Full-reward case 'x' does not pin"}, "cases": cases}
    return FixturesResult("fixtures", (_parse("reverse_word", "resources_servers/reverse_word/"
                                                             "app.py", data),), str(PKG))


FAILED = {"name": "right answer in capitals", "kind": "full_reward", "passed": False,
          "expected_reward": 1.0, "observed": [0.0], "line": 2,
          "message": "a full-reward case must score the best reward 1.0, observed 0.0"}
PASSED = {"name": "right answer", "kind": "full_reward", "passed": True,
          "expected_reward": 1.0, "observed": [1.0], "line": 1}


def test_a_failing_case_is_an_ek809_at_its_line() -> None:
    (d,) = _result([PASSED, FAILED]).diagnostics
    assert (d.code, d.severity.value, d.path, d.line) == ("EK809", "error", CASES, 2)
    assert "'right answer in capitals' (full_reward)" in d.message
    assert "expected 1.0, observed 0" in d.message


def test_one_cause_for_every_case_is_said_once() -> None:
    broken = [{"name": n, "kind": "full_reward", "passed": False, "expected_reward": 1.0,
               "message": f"Case '{n}' could not create a fresh server: config.yaml missing"}
              for n in ("a", "b")]
    (d,) = _result(broken).diagnostics
    assert "every verifier case" in d.message and "config.yaml missing" in d.message


def test_a_fixture_that_cannot_run_is_one_ek809_at_the_entrypoint() -> None:
    (d,) = _result([], status="error", message="could not import").diagnostics
    assert d.code == "EK809" and "could not import" in d.message
    (d,) = _result([PASSED]).diagnostics  # Gym refused the file, no case failed (kinds missing)
    assert "does not pin" in d.message
    assert _result([PASSED], gym_ok=True).diagnostics == []


def test_json_and_human_table(capsys: pytest.CaptureFixture[str]) -> None:
    report = ProbeReport(str(PKG), "done", phases=(_result([PASSED, FAILED]),))
    assert render.render(ProbeOutcome(report, PKG), "json") == 1
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, load_schema("probe"))
    (server,) = data["phases"]["fixtures"]["servers"]
    assert server["passed"] is False and [c["passed"] for c in server["cases"]] == [True, False]
    render.render(ProbeOutcome(report, PKG), "human")
    out = capsys.readouterr().out
    assert "Gym verifier fixture reverse_word: failed" in out
    assert "FAIL right answer in capitals" in out and "expected 1, observed 0" in out
