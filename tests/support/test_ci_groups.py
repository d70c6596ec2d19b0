"""CI's groups: every test in exactly one, what each need selects, and the two rules conftest
enforces on a real pytest run (a test in no group is refused; in CI a skip fails the run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from support.ci_groups import GROUPS, NEEDS, expression, groups_of
from support.paths import REPO_ROOT, SUPPORT


@pytest.mark.parametrize("need", list(NEEDS))
def test_a_test_with_one_need_is_in_that_group_only(need: str) -> None:
    assert groups_of({need, "slow"}) == [need]


def test_a_test_with_several_needs_is_counted_in_the_heaviest() -> None:
    assert groups_of({"slow", "network", "gym", "train"}) == ["train"]
    assert groups_of({"slow", "network", "platform"}) == ["platform"]
    assert groups_of({"slow", "ray", "gym"}) == ["ray"]


def test_an_unmarked_test_is_fast_and_a_bare_slow_one_is_in_no_group() -> None:
    assert groups_of({"parametrize", "timeout"}) == ["fast"]
    assert groups_of({"slow"}) == []


def test_the_groups_are_the_fast_one_then_one_per_need() -> None:
    assert GROUPS == ("fast", "platform", "ray", "train", "gym", "network")
    assert expression("network") == \
        "network and not platform and not ray and not train and not gym"
    with pytest.raises(KeyError, match="no CI group"):
        expression("slowest")


def test_pyproject_registers_exactly_the_umbrella_and_the_needs() -> None:
    ini = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))
    markers = ini["tool"]["pytest"]["ini_options"]["markers"]
    assert {line.split(":", 1)[0] for line in markers} == {"slow", *NEEDS}
    assert "--strict-markers" in ini["tool"]["pytest"]["ini_options"]["addopts"]


def test_test_sh_runs_each_group_from_this_module() -> None:
    script = (REPO_ROOT / "scripts" / "test.sh").read_text("utf-8")
    assert "for group in $(.venv/bin/python tests/support/ci_groups.py)" in script
    assert 'pytest -m "$expr"' in script
    assert "bash scripts/test.sh" in (REPO_ROOT / ".ci" / "run").read_text("utf-8")


def _suite(tmp_path: Path, body: str) -> Path:
    """A throwaway suite under the real conftest and its helpers (copied), with one test file."""
    tests = tmp_path / "tests"
    (tests / "support").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "tests" / "conftest.py", tests / "conftest.py")
    for helper in ("ci_groups.py", "signals.py"):  # what conftest imports
        shutil.copy(SUPPORT / helper, tests / "support" / helper)
    (tests / "support" / "__init__.py").write_text("")
    lines = "\n".join(f"    {name}: x" for name in ("slow", *NEEDS))
    (tmp_path / "pytest.ini").write_text(f"[pytest]\naddopts = --strict-markers -p no:cacheprovider"
                                         f"\nmarkers =\n{lines}\n")
    (tests / "test_x.py").write_text("import pytest\n\n" + body)
    return tmp_path


def _pytest(root: Path, *args: str, ci: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "tests", *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_run_with_a_test_in_no_group_is_refused(tmp_path: Path) -> None:
    root = _suite(tmp_path, "@pytest.mark.slow\ndef test_stray():\n    pass\n\n"
                            "def test_fast():\n    pass\n")
    done = _pytest(root, "-m", "not slow")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "tests/test_x.py::test_stray: no group" in done.stderr


def test_a_need_marker_makes_a_test_slow(tmp_path: Path) -> None:
    root = _suite(tmp_path, "@pytest.mark.gym\ndef test_gym():\n    pass\n\n"
                            "def test_fast():\n    pass\n")
    slow = _pytest(root, "-m", "slow", "--collect-only")
    assert "test_gym" in slow.stdout and "test_fast" not in slow.stdout, slow.stdout
    assert _pytest(root, "-m", "not slow").stdout.count("passed") == 1


def test_in_ci_a_skip_fails_the_run_and_outside_it_does_not(tmp_path: Path) -> None:
    root = _suite(tmp_path, "def test_skips():\n    pytest.skip('no torch')\n")
    assert _pytest(root).returncode == pytest.ExitCode.OK
    done = _pytest(root, ci=True)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout
    assert "nothing may be skipped in CI" in done.stdout
