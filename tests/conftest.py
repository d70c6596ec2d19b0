"""Suite-wide hooks: the import paths, the CI groups' markers, and CI's "nothing skipped" rule."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # the `support` package: builders, launchers, paths
sys.path.insert(0, str(TESTS.parent / "fixtures"))  # fixtures/wheelfactory.py and friends

from support.ci_groups import NEEDS, groups_of  # noqa: E402  (needs the path above)
from support.gym_ray import GYM_RAY_ADDRESS_ENV, OWN_RAY, shared_cluster  # noqa: E402
from support.signals import restore_sigint  # noqa: E402

restore_sigint()  # a backgrounded run's children must still stop on Ctrl-C (support/signals.py)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that needs a real thing ``slow`` (before ``-m`` deselects), and refuse
    a run where a collected test is in no CI group or in two: CI would never run it, or twice."""
    strays = []
    for item in items:
        names = {mark.name for mark in item.iter_markers()}
        if names & NEEDS.keys() and "slow" not in names:
            item.add_marker(pytest.mark.slow)
            names.add("slow")
        groups = groups_of(names)
        if len(groups) != 1:
            strays.append(f"  {item.nodeid}: {', '.join(groups) or 'no group'}")
    if strays:
        raise pytest.UsageError(
            "every test must be in exactly one CI group (tests/support/ci_groups.py); "
            f"a slow test says what it needs with one of the markers {', '.join(NEEDS)}:\n"
            + "\n".join(strays))


@pytest.fixture(scope="session", autouse=True)
def _gym_ray(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """One Ray cluster for the session's Gym bring-ups (``support/gym_ray.py``)."""
    with shared_cluster(request.session) as address:
        yield address


@pytest.fixture(autouse=True)
def _own_ray(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """``@pytest.mark.own_ray``: this test's bring-ups start their own Ray, as without the
    shared cluster."""
    if request.node.get_closest_marker(OWN_RAY):
        monkeypatch.delenv(GYM_RAY_ADDRESS_ENV, raising=False)


@pytest.fixture(autouse=True)
def _vllm_interpreter(request: pytest.FixtureRequest) -> None:
    """A ``vllm`` test on an interpreter without vLLM fails, naming how to run it: the group
    has a venv of its own, and a test that cannot run there must never pass as skipped."""
    if request.node.get_closest_marker("vllm") and importlib.util.find_spec("vllm") is None:
        pytest.fail(f"this test needs vLLM, which {sys.executable} lacks: run its group on the "
                    "group's own venv, `.venv/bin/python tests/support/run_groups.py vllm` "
                    "(tests/support/vllm_venv.py builds it)", pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI (``CI`` set), a skipped test fails the run: CI installs every extra, so a skip
    there means a test that silently stopped testing anything."""
    if not os.environ.get("CI") or exitstatus != pytest.ExitCode.OK:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} skipped; nothing may be skipped in CI "
                            "(see the short test summary for why each was)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
