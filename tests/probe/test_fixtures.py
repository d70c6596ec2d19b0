"""The probe fixtures are what generate.py writes, and each validates clean (with its
dataset and job, also --offline): what is wrong with them only a probe can see (but the echo
case's leaked answers)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.paths import REPO_ROOT

from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions

PROBE = REPO_ROOT / "fixtures" / "probe"
CASES = sorted(p.name for p in PROBE.iterdir() if (p / "pkg").is_dir())


def test_generate_check_passes() -> None:
    proc = subprocess.run([sys.executable, str(PROBE / "generate.py"), "--check"],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_case_is_here() -> None:
    assert sorted(["sound", "gameable_length", "gameable_format", "gameable_echo",
                            "gameable_injection", "constant", "nondeterministic",
                            "breaks_under_load", "wrong_oracle_field", "slow_verify",
                            "fixture_fails", "reasoning_sound", "reasoning_leak",
                            "reasoning_no_strip", "tool_call_sound",
                            "tool_call_name_only"]) == CASES


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("offline", [False, True])
def test_each_case_validates(case: str, offline: bool) -> None:
    root = PROBE / case
    report = validate(ValidateRequest(package=root / "pkg", dataset=root / "data",
                                      job=root / "job.json",
                                      options=CheckOptions(offline=offline)))
    assert report.valid, [f"{d.code} {d.message}" for d in report.diagnostics]
    # The echo case's prompts list the answer among the choices: what makes echoing score is
    # also a leaked answer (EK507, a warning).
    assert {d.code for d in report.diagnostics} == ({"EK507"} if case == "gameable_echo" else set())
