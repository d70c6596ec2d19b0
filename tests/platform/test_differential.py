"""envkit's verdict vs the platform's own checks over every package and job under fixtures/.

The platform checks in two places: on disk (``python -m nmp.rl.tasks.environment
--validate-only DIR``, the reference validator) and at submit (the job POST's transform, which
checks the FileSet listing and the job). envkit must never call valid what either rejects,
and every platform rejection must carry an EK code. Prints the agreement table.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from support.platform_services import register_model, running_services
from support.platform_venv import ensure_platform_venv

from envkit.model.target import Target
from envkit.platform import resolve_connection
from envkit.platform.errors import PlatformError, ek_code_for
from envkit.platform.http import PlatformClient
from envkit.platform.jobs import JobRef, cancel_job, create_job, new_job_name
from envkit.platform.progress import CountingProgress
from envkit.platform.submit import publish, publish_package
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions

pytestmark = pytest.mark.platform

ROOT = REPO_ROOT
CASES = ROOT / "fixtures" / "packages"
BASE_JOB = json.loads((ROOT / "examples" / "tiny_grpo.json").read_text())

# Job-level disagreements left open (none: unknown job keys are EK610 errors, as the platform's
# extra_forbidden; the job model follows the platform's schema).
KNOWN_JOB_GAPS: dict[str, str] = {}

# Runs the reference validator's own entry point, ``main(["--validate-only", DIR])``, for every
# directory in one interpreter (the CLI costs ~2 s of imports per call).
_DRIVER = """
import json, logging, sys
from nmp.rl.tasks.environment.__main__ import main
class Keep(logging.Handler):
    def emit(self, record): self.lines.append(record.getMessage())
keep = Keep(); logging.getLogger().addHandler(keep)
out = {}
for d in sys.argv[1:]:
    keep.lines = []
    try:
        rc = main(["--validate-only", d])
    except Exception as exc:  # the validator itself crashed: a rejection too (exit 1 + traceback)
        rc, keep.lines = 1, keep.lines + [f"crash {type(exc).__name__}: {exc}"]
    out[d] = [rc, " ".join(l for l in keep.lines if l)]
print(json.dumps(out))
"""


def _cases() -> list[tuple[str, dict]]:
    return [(p.parent.name, json.loads(p.read_text())) for p in sorted(CASES.glob("*/case.json"))]


def _envkit_verdict(name: str, case: dict) -> set[str]:
    base = CASES / name
    opts = case.get("options") or {}
    target = Target(arch=opts["arch"]) if "arch" in opts else Target()
    report = validate(ValidateRequest(
        package=base / case["package"] if case.get("package") else None,
        dataset=base / case["dataset"] if case.get("dataset") else None,
        job=base / case["job"] if case.get("job") else None,
        options=CheckOptions(target, offline=bool(opts.get("offline"))),
    ))
    return {d.code for d in report.diagnostics if d.severity.value == "error"}


def _disk_verdicts(dirs: list[Path]) -> dict[str, tuple[int, str]]:
    python = ensure_platform_venv()
    proc = subprocess.run([str(python), "-c", _DRIVER, *map(str, dirs)], capture_output=True,
                          text=True, timeout=600, check=True)
    return {k: (v[0], v[1]) for k, v in json.loads(proc.stdout.splitlines()[-1]).items()}


def _submit(client: PlatformClient, spec: dict) -> tuple[bool, str]:
    ref = JobRef("default", new_job_name())
    try:
        create_job(client, ref, spec)
    except PlatformError as exc:
        return False, exc.detail or str(exc)
    cancel_job(client, ref)  # accepted is all we need; keep the machine quiet
    return True, ""


def _job_spec(raw: object, env: str, data: str) -> object:
    """Refs written in the way submit does, but only where they are strings (EK608 keeps its
    object)."""
    if not isinstance(raw, dict):
        return raw
    spec = dict(raw)
    for key, value in (("environment", env), ("dataset", data)):
        if isinstance(spec.get(key), str) or key not in spec:
            spec[key] = value
    if isinstance(spec.get("model"), str) or "model" not in spec:
        spec["model"] = BASE_JOB["model"]  # as `--model` does: the fixture registers this one
    return spec


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory):
    with running_services(tmp_path_factory.mktemp("nmp-diff"), "e2e") as url:
        register_model(url, "default", "tiny-char-model")
        yield url


def _platform_row(client, name, case, valid_env, valid_data, disk):  # type: ignore[no-untyped-def]
    base = CASES / name
    env_ref, data_ref, spec = valid_env, valid_data, BASE_JOB
    disk_verdict = None
    if case.get("package") and case["package"] == "pkg":
        disk_verdict = disk[str(base / "pkg")]
        try:
            env_ref = publish_package(client, "default", base / "pkg", CountingProgress()).ref
        except (PlatformError, OSError, AttributeError, TypeError) as exc:
            return disk_verdict, (False, f"upload refused: {exc}")
    if case.get("dataset"):
        data_ref = publish(client, "default", base / case["dataset"], "dataset", f"d-{name}",
                           CountingProgress()).ref
    if case.get("job"):
        try:
            spec = json.loads((base / case["job"]).read_text())
        except ValueError as exc:
            return disk_verdict, (False, f"not JSON: {exc}")
    return disk_verdict, _submit(client, _job_spec(spec, env_ref, data_ref))


def test_envkit_never_calls_valid_what_the_platform_rejects(platform, capsys):
    cases = _cases()
    disk = _disk_verdicts([CASES / n / "pkg" for n, c in cases if c.get("package") == "pkg"])
    client = PlatformClient(resolve_connection(platform, "default"))
    valid_env = publish_package(client, "default", CASES / "valid-wheels-v1" / "pkg",
                                CountingProgress()).ref
    valid_data = publish(client, "default", _valid_dataset(CASES.parent.parent), "dataset",
                         "valid-data", CountingProgress()).ref
    rows, problems, details = [], [], {}
    for name, case in cases:
        ours = _envkit_verdict(name, case)
        disk_v, (accepted, detail) = _platform_row(client, name, case, valid_env, valid_data, disk)
        disk_ok = disk_v is None or disk_v[0] == 0
        platform_ok = disk_ok and accepted
        agree = ("same" if platform_ok == (not ours)
                 else "envkit stricter" if platform_ok else "PLATFORM STRICTER")
        said = detail or (disk_v[1] if disk_v and not disk_ok else "")
        said = said.replace("Failed to transform customization job input to output: ", "")
        rows.append((name, ",".join(sorted(ours)) or "valid",
                     "-" if disk_v is None else ("ok" if disk_ok else "reject"),
                     "ok" if accepted else "reject", agree,
                     said[-160:].replace("\n", " ")))
        mapped = ek_code_for(detail) if detail else None
        details[name] = {"ours": sorted(ours), "detail": detail, "mapped": mapped}
        if not platform_ok and not ours and name not in KNOWN_JOB_GAPS:
            problems.append((name, detail or disk_v))
        if mapped and mapped not in ours and not accepted and name not in KNOWN_JOB_GAPS:
            problems.append((name, f"detail maps to {mapped}, envkit said {sorted(ours)}"))
    client.close()
    out = Path(os.environ.get("ENVKIT_DIFF_OUT", "/tmp")) / "platform-differential.json"
    out.write_text(json.dumps(details, indent=1))
    with capsys.disabled():
        print("\ncase | envkit | platform disk | platform submit | verdicts | platform says")
        for row in rows:
            print(" | ".join(row))
        print(f"same verdict {sum(r[4] == 'same' for r in rows)}/{len(rows)}, envkit stricter "
              f"{sum(r[4] == 'envkit stricter' for r in rows)}, platform stricter "
              f"{sum(r[4] == 'PLATFORM STRICTER' for r in rows)}; known job-level "
              f"gaps: {KNOWN_JOB_GAPS}")
    assert not problems, problems


def test_a_directory_above_the_package_is_rejected_by_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``envkit validate DIR`` (discovery included) against the platform's ``--validate-only
    DIR`` where the package sits below DIR: an archive unpacked one level too deep, and a
    repository root of several packages with no workspace setting. Both must refuse."""
    from envkit.cli import main

    one_down = CASES / "EK100-nested-manifest" / "pkg"
    repo = tmp_path / "repo"
    for name in ("a", "b"):
        shutil.copytree(CASES / "valid-wheels-v1" / "pkg", repo / "envs" / name)
    dirs = [one_down, repo, one_down / "echo-match", repo / "envs" / "a"]
    disk = _disk_verdicts(dirs)
    verdicts = {}
    for directory in dirs:
        rc = main(["validate", str(directory), "--output-format", "json"])
        report = json.loads(capsys.readouterr().out)
        codes = sorted({d["code"] for d in report["diagnostics"] if d["severity"] == "error"})
        verdicts[directory] = (rc, codes, disk[str(directory)])
    for directory in dirs[:2]:  # not packages: the platform rejects them, envkit too (EK100)
        rc, codes, (platform_rc, said) = verdicts[directory]
        assert platform_rc != 0 and "nemo-environment.yaml" in said, (directory, said)
        assert rc == 1 and codes == ["EK100"], verdicts[directory]
    for directory in dirs[2:]:  # the packages themselves: both accept
        rc, codes, (platform_rc, said) = verdicts[directory]
        assert platform_rc == 0 and rc == 0, verdicts[directory]


def _valid_dataset(_: Path) -> Path:
    """valid-dataset's rows name the adapter's agent; the submit check only needs the file."""
    return CASES / "valid-dataset" / "data"
