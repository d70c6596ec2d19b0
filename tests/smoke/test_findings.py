"""Smoke's findings without Gym: a runtime error or a failed rollout becomes an ordinary
diagnostic at the config that defines the server, and validate's renderers print it.

The session is real (the package read by the validator's loader), only never started: the
runtime's error is built as the runtime builds it.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from toy_envs import make_native_package

from envkit.gym import (
    GymRuntimeError,
    GymServers,
    GymSession,
    PolicyEndpoint,
    Rollout,
    RuntimeOptions,
    ServerInfo,
)
from envkit.output.human import Console
from envkit.output.smoke import render_github_smoke, render_human_smoke, render_sarif
from envkit.schemas import load_schema
from envkit.smoke.report import SmokeReport
from envkit.smoke.verdict import SpinUpWatch, locate, rollout_report, start_failure_report
from envkit.validate.gate import GateRequest, gate_package

CONFIG = "resources_servers/char_pattern/configs/char_pattern.yaml"
TYPES = {"policy_model": "responses_api_models", "char_pattern": "resources_servers",
         "char_pattern_simple_agent": "responses_api_agents",
         "char_pattern_environment_server": "environment_servers"}


@pytest.fixture
def session(tmp_path: Path):
    pkg = make_native_package(tmp_path / "char-pattern")
    gym = GymSession(pkg, PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m"), RuntimeOptions())
    yield gym
    gym.close()


def _base(session: GymSession) -> SmokeReport:
    (static,) = gate_package(session.package, GateRequest(paths=(session.package,))).reports
    return SmokeReport(str(session.package), "setup", static)


def _watch(ready: tuple[str, ...] = ()) -> SpinUpWatch:
    watch = SpinUpWatch(setup_s=1.0)
    watch.on_servers_known({n: ServerInfo(n, t, "impl", f"http://127.0.0.1:9/{n}")
                            for n, t in TYPES.items()})
    for name in ready:
        watch.on_server_ready(name, 2.0)
    return watch


def test_locate_finds_the_config_and_line_of_an_instance(session: GymSession) -> None:
    assert locate(session.model, "char_pattern_simple_agent") == (CONFIG, 8)
    assert locate(session.model, "nowhere") == ("nemo-environment.yaml", None)


def test_a_failed_server_is_a_diagnostic_at_its_config(session: GymSession) -> None:
    exc = GymRuntimeError("a server failed to start (`char_pattern`): ...", code="EK403",
                          reason="a server imports a module its venv does not have",
                          evidence="ModuleNotFoundError: No module named 'rapidfuzz'",
                          log_tail="Traceback ...\nModuleNotFoundError: No module named "
                                   "'rapidfuzz'", server="char_pattern", stage="start")
    report = start_failure_report(_base(session), _watch(("policy_model",)), session, exc)
    assert report.stage == "start" and not report.passed
    (found,) = report.findings
    d = found.diagnostic
    assert (d.code, d.path, d.line) == ("EK403", CONFIG, 1)
    assert "server `char_pattern`" in d.message and "rapidfuzz" in d.message
    assert d.hint  # the rule's fix
    assert found.subject == "char_pattern" and "rapidfuzz" in found.log_tail
    by_name = {s.name: s for s in report.servers}
    assert by_name["policy_model"].ready and by_name["policy_model"].ready_s == 2.0
    assert by_name["char_pattern"].failure is found
    assert by_name["char_pattern_simple_agent"].failure is None  # merely not done yet
    assert report.codes == ["EK403"]


def test_an_unrecognised_start_failure_is_ek705(session: GymSession) -> None:
    """A server that exits with a log no signature knows: EK705, at its config."""
    exc = GymRuntimeError("a server failed to start (`char_pattern`): see the log tail",
                          code=None, reason="see the log tail above", server="char_pattern",
                          stage="start", log_tail="something odd")
    report = start_failure_report(_base(session), _watch(), session, exc)
    (found,) = report.findings
    assert (found.code, found.diagnostic.path) == ("EK705", CONFIG)


def test_a_timeout_names_every_late_server_ek701(session: GymSession) -> None:
    late = ("char_pattern", "char_pattern_simple_agent")
    exc = GymRuntimeError("servers not ready after 5s", code="EK701", reason="not ready",
                          not_ready=late, stage="start", timed_out=True)
    watch = _watch(("policy_model", "char_pattern_environment_server"))
    report = start_failure_report(_base(session), watch, session, exc)
    assert {f.subject: f.code for f in report.findings} == dict.fromkeys(late, "EK701")
    assert report.failures == ()  # every finding concerns a server


def test_a_setup_failure_with_no_server_concerns_the_run(session: GymSession) -> None:
    exc = GymRuntimeError("building the server venvs failed: ...", code="EK403",
                          reason="a requirement is not satisfied by wheels/", stage="setup")
    report = start_failure_report(_base(session), SpinUpWatch(), session, exc)
    assert report.stage == "setup"
    (found,) = report.failures
    assert (found.code, found.subject, found.diagnostic.path) == (
        "EK403", None, "nemo-environment.yaml")


def _servers(session: GymSession) -> GymServers:
    servers = {n: ServerInfo(n, t, "impl", f"http://127.0.0.1:9/{n}") for n, t in TYPES.items()}
    config = {"char_pattern_simple_agent": {"responses_api_agents": {"simple_agent": {
        "resources_server": {"type": "resources_servers", "name": "char_pattern"}}}}}
    return GymServers("http://127.0.0.1:9", servers, config, session.package / "logs",
                      {"char_pattern_simple_agent": "char_pattern_environment_server"})


def test_failed_rollouts_are_agent_diagnostics(session: GymSession) -> None:
    agent = "char_pattern_simple_agent"
    results = [Rollout.failed(0, agent, "no numeric `reward` in the answer: 'high'", {}),
               Rollout.failed(1, agent, "HTTP 500 from http://x/run: boom", {})]
    report = rollout_report(_base(session), _watch(tuple(TYPES)), session, _servers(session),
                            results, synthetic={agent})
    assert report.stage == "done" and not report.passed
    (result,) = report.agents
    assert [f.code for f in result.failures] == ["EK702", "EK704"]
    assert all(f.diagnostic.path == CONFIG and f.diagnostic.line == 8 for f in result.failures)
    assert "boom" in result.failures[1].diagnostic.message
    assert report.codes == ["EK702", "EK704"]


def test_a_passing_run_and_its_rewards(session: GymSession) -> None:
    agent = "char_pattern_simple_agent"
    ok = Rollout.from_turns(0, agent, 0.5, (), False, {})
    report = rollout_report(_base(session), _watch(tuple(TYPES)), session, _servers(session),
                            [ok], synthetic=set())
    assert report.passed and report.findings == ()
    by_name = {s.name: s for s in report.servers}
    assert by_name["char_pattern"].first_reward == 0.5  # the agent's resources server
    assert by_name["char_pattern_environment_server"].first_reward == 0.5  # its relay
    jsonschema.validate(report.to_dict(), load_schema("smoke"))


def _failed(session: GymSession) -> SmokeReport:
    exc = GymRuntimeError("x", code="EK403", reason="a server imports a module its venv does "
                          "not have", evidence="No module named 'rapidfuzz'",
                          log_tail="line one\nNo module named 'rapidfuzz'", server="char_pattern",
                          stage="start")
    return start_failure_report(_base(session), _watch(), session, exc)


def test_the_json_is_versioned_and_follows_its_schema(session: GymSession) -> None:
    data = _failed(session).to_dict()
    jsonschema.validate(data, load_schema("smoke"))
    assert data["version"] == "2.0"
    (diag,) = data["diagnostics"]
    assert diag["code"] == "EK403" and diag["path"] == CONFIG and diag["line"] == 1
    assert diag["package"] == str(session.package) and diag["subject"] == "char_pattern"
    assert diag["url"] is None  # no `docs-url` setting: no link to a site envkit does not serve
    by_name = {s["name"]: s for s in data["servers"]}
    assert by_name["char_pattern"]["failure"] == diag


def test_validate_renderers_print_spin_up_diagnostics(session: GymSession, tmp_path) -> None:
    report = _failed(session)
    out = tmp_path / "human.txt"
    with out.open("w") as fh:
        render_human_smoke(report, Console(fh))
    human = out.read_text()
    assert f"{session.package / CONFIG}:1: error[EK403] server `char_pattern`" in human
    assert "= help:" in human and "  | line one" in human
    assert "failed: smoke (start)" in human
    github = render_github_smoke(report)
    assert f"::error file={session.package / CONFIG},line=1,title=EK403::" in github
    assert "::group::EK403 log tail of char_pattern" in github
    (run,) = render_sarif(report)["runs"]
    (result,) = run["results"]
    assert result["ruleId"] == "EK403"
    assert result["properties"]["subject"] == "char_pattern"
    assert "rapidfuzz" in result["properties"]["log_tail"]
    json.dumps(run)
