"""``envkit.output.render``: one renderer per result type (by type, not by name), and the JSON of
every result type validates against the schema ``schema_for`` names; the error object too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from support.paths import FIXTURES

from envkit.errors import KIND_EXITS, FailedError
from envkit.output.failure import error_dict
from envkit.output.render import registered_types, render, schema_for
from envkit.schemas import SCHEMAS, load_schema
from envkit.validate.report import Report, ValidationRun
from envkit.validate.validate import ValidateRequest, validate

CASES = FIXTURES / "packages"
TMP = Path("/nonexistent/out")  # results name paths; nothing is read or written there


def _report(case: str = "EK102-unknown-top-level-key") -> Report:
    return validate(ValidateRequest(package=CASES / case / "pkg"))


def _validation() -> object:
    return ValidationRun((_report(), _report("valid-native-v1")))


def _convert() -> object:
    from envkit.converters.verifiers import ConvertResult
    from envkit.output.results import ConvertOutcome

    result = ConvertResult(TMP, TMP / "data", 8, 2, ("a-1.0-py3-none-any.whl",), "hub", None)
    return ConvertOutcome(result, _report("valid-native-v1"))


def _refused_convert() -> object:
    from envkit.output.results import ConvertOutcome

    return ConvertOutcome(None, _report())


def _rollout() -> object:
    from envkit.gym.rollout import Rollout
    from envkit.output.results import RolloutOutcome
    from envkit.rollout import RolloutSummary

    done = Rollout(0, (1,), (2, 3), (-0.1, -0.2), 0.5, False, agent="a")
    failed = Rollout.failed(1, "a", "server died", {})
    summary = RolloutSummary((done, failed), {"a": 0.5}, 1.0, 2.0, aborted="server died")
    return RolloutOutcome(summary, TMP / "rows.jsonl")


def _train() -> object:
    from envkit.output.results import TrainOutcome
    from envkit.trainer.grpo import TrainResult

    return TrainOutcome(TrainResult(3, TMP / "final", TMP / "metrics.jsonl", {"train_reward": 0.2}))


def _compiled_config() -> object:
    from envkit.output.results import CompiledConfig
    from envkit.trainer.nemo_config import report_for_job

    return CompiledConfig(report_for_job(CASES / "valid-job-grpo-lora" / "job.json",
                                         CASES / "valid-dataset" / "data"))


def _schema() -> object:
    from envkit.output.results import SchemaText

    return SchemaText("error", "{}\n")


def _rules() -> object:
    from envkit.output.results import RuleDocs
    from envkit.validators import RULES

    return RuleDocs(tuple(RULES.values()), detail=False)


def _settings() -> object:
    from envkit.output.results import SettingsView

    return SettingsView((("pkg", {"arch": "x86_64", "select": ["EK1"]}),))


def _smoke() -> object:
    from envkit.model.diagnostics import Diagnostic, Severity
    from envkit.smoke.report import (
        AgentResult,
        ServerResult,
        SmokeFinding,
        SmokeOutcome,
        SmokeReport,
    )

    failure = SmokeFinding(Diagnostic("EK701", Severity.ERROR, "", None,
                                      "the server did not start", "Read the log tail."),
                           "s", "Traceback ...")
    report = SmokeReport("pkg", "start", _report("valid-native-v1"),
                         servers=(ServerResult("s", "resources_servers", "x", False, 1.0,
                                               failure=failure),),
                         agents=(AgentResult("a", (1.0,)),), failures=(failure,),
                         timings={"start_s": 1.0})
    return SmokeOutcome(report, TMP)


def _job_ref() -> object:
    from envkit.platform.jobs import JobRef

    return JobRef("default", "rl-1")


def _submit() -> object:
    from envkit.platform.outcomes import SubmitOutcome
    from envkit.platform.submit import Published
    from envkit.platform.upload import UploadStats

    env = Published("default/env-1", True, UploadStats(3, 100))
    data = Published("default/data-1", False, UploadStats(0, 0))
    return SubmitOutcome(_job_ref(), {"name": "rl-1", "spec": {}}, True, env, data,
                         {"status": "completed"}, (TMP / "metrics.jsonl",))


def _job_reply() -> object:
    from envkit.platform.outcomes import JobReply

    return JobReply("wait", _job_ref(), {"status": "error"})


def _job_show() -> object:
    from envkit.model.provenance import Provenance
    from envkit.platform.outcomes import JobShow

    record = Provenance("0.1.0", "env", "wheels-v1", "a" * 64, lock_sha256="b" * 64,
                        target="cp313-manylinux_2_17_x86_64", gym_version="0.7.0")
    return JobShow(_job_ref(), {"name": "rl-1", "status": "completed", "spec": {}},
                   dict(record.to_dict(files=False)))


def _job_metrics() -> object:
    from envkit.platform.outcomes import JobMetrics

    return JobMetrics(_job_ref(), [{"step": 1, "train_reward": 0.5}])


def _job_logs() -> object:
    from envkit.platform.outcomes import JobLogs

    return JobLogs(_job_ref(), iter([{"timestamp": "t", "job_step": "s", "message": "m"}]))


def _probe() -> object:
    from envkit.probe import ProbeOutcome, ProbeReport

    return ProbeOutcome(ProbeReport("pkg", "validate", _report("valid-native-v1")), TMP)


def _profile() -> object:
    from envkit.probe.analysis.job import ProbeJob
    from envkit.profile import Band, ProfileReport
    from envkit.profile.analysis import row_profile
    from envkit.profile.sampling import Sampled

    job = ProbeJob(concurrency=2, rollouts_per_step=4, max_new_tokens=8, temperature=1.0,
                   group_size=2)
    rows = (row_profile("training", 0, [0.0, 1.0]), row_profile("training", 1, [1.0, 1.0]))
    return ProfileReport("model", "hf", 1.0, Sampled(job, rows, 1.0, 2.0), Band(0.1, 0.9))


def _init() -> object:
    from envkit.init.project import InitResult

    return InitResult(TMP / "my-env", "gym", "my-env", "wheels-v1", "x86_64",
                      ("envkit.toml", "jobs/grpo.json"), ("cd my-env", "envkit build ..."))


def _prefetch() -> object:
    from envkit.gym import PrefetchResult

    return PrefetchResult(str(TMP / "pkg"), "0.7.0", str(TMP / "gym"), False, str(TMP / "v"),
                          True, True, ("resources_servers/r", "responses_api_agents/a"), 12.5)


def _rescore() -> object:
    from envkit.rescore import RescoreReport, RowScore

    rows = (RowScore(1, "a", 0.0, 1.0, "rescored"), RowScore(2, "a", 1.0, None, "refused", "x"))
    return RescoreReport(str(TMP), str(TMP / "pkg"), "rollouts.jsonl", True, rows, None)


SAMPLES: dict[str, Callable[[], object]] = {
    "validation": _validation, "convert": _convert,
    "refused convert": _refused_convert, "rollout": _rollout, "train": _train,
    "compiled config": _compiled_config, "schema": _schema, "rules": _rules,
    "settings": _settings, "smoke": _smoke, "submit": _submit, "job reply": _job_reply,
    "job metrics": _job_metrics, "job logs": _job_logs, "job show": _job_show, "init": _init,
    "probe": _probe, "prefetch": _prefetch, "rescore": _rescore,
    "profile": _profile,
}
"""One result of every type a command returns (the real types, with made-up values)."""


def test_every_registered_result_type_has_a_sample() -> None:
    sampled = {type(make()) for make in SAMPLES.values()}
    assert set(registered_types()) == sampled


@pytest.mark.parametrize("name", SAMPLES)
def test_json_output_follows_the_schema_its_type_names(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = SAMPLES[name]()
    schema = schema_for(type(result))
    rc = render(result, "json")
    out = capsys.readouterr().out
    assert rc in (0, 1)
    if schema is None:  # `envkit schema NAME` prints a schema, not a result
        assert out == "{}\n"
        return
    assert schema in SCHEMAS
    data = json.loads(out)
    Draft202012Validator(load_schema(schema)).validate(data)
    assert data["version"] == load_schema(schema)["properties"]["version"]["const"]


@pytest.mark.parametrize("name", SAMPLES)
def test_every_result_renders_for_people(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert render(SAMPLES[name](), "human") in (0, 1)
    assert capsys.readouterr().out


def test_dispatch_is_by_type_so_a_namesake_is_not_rendered() -> None:
    class ValidationRun:  # the name of a result type, not the type
        reports = ()

    with pytest.raises(TypeError, match=r"no renderer for .*ValidationRun"):
        render(ValidationRun(), "json")


def test_a_subclass_renders_as_its_base(capsys: pytest.CaptureFixture[str]) -> None:
    class Wrapped(ValidationRun):
        pass

    assert render(Wrapped((_report(),)), "json") == 1
    assert json.loads(capsys.readouterr().out)["valid"] is False
    assert schema_for(Wrapped) == "diagnostics"


def test_the_error_object_follows_its_schema() -> None:
    data = error_dict(FailedError("boom", hint="retry", code="EK701", diagnostics=_report()
                                  .diagnostics), "failed")
    Draft202012Validator(load_schema("error")).validate(data)
    assert data["error"]["code"] == "EK701" and data["diagnostics"]
    assert set(KIND_EXITS) == set(load_schema("error")["properties"]["error"]["properties"]
                                  ["kind"]["enum"])


_STARTUP = """
import json, sys
from envkit.cli import main
rc = main(["validate", sys.argv[1], "--offline", "--output-format", sys.argv[2]])
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
HEAVY = ("torch", "httpx", "rich", "jsonschema", "envkit.platform", "envkit.builder",
         "envkit.smoke", "envkit.trainer", "envkit.gym")


@pytest.mark.parametrize("fmt", ["human", "json", "sarif", "github"])
def test_validate_renders_without_importing_the_heavy_parts(fmt: str) -> None:
    """A pre-commit hook pays every import on every commit: rendering by type must not import
    the other commands' result modules, the platform client, rich or torch."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _STARTUP, str(CASES / "valid-native-v1" / "pkg"),
                           fmt], capture_output=True, text=True, check=True, timeout=120)
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert not [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]


def test_envkit_never_imports_jsonschema() -> None:
    """jsonschema is a test dependency: the schemas ship as data, nothing validates at run
    time."""
    import ast

    from support.paths import REPO_ROOT

    users = []
    for folder in ("envkit", "validators", "converters", "trainer"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
            names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
            if any(name.split(".")[0] == "jsonschema" for name in names):
                users.append(path)
    assert not users
