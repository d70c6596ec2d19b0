"""``envkit probe`` on real NeMo Gym 0.7.0 resources servers, built from the nemo-gym wheel as
envkit builds any server dir, with the rows the wheel ships for each.

    .venv/bin/python benchmarks/probe_real_servers.py [CASE ...] [--out DIR]

For each case: ``envkit build <site-packages>/resources_servers/<server> --format wheels-v1``
(the server dir as the wheel installs it; the Gym venv is envkit's cached one), a dataset whose
``training.jsonl`` is the server's own ``data/example.jsonl`` (5 rows; ``agent_ref`` added where
Gym's example rows leave it out, as ``gym eval run`` fills it from the config), a small GRPO job
(batch_size 8, G 4, max_new_tokens 512), then

    envkit probe PKG --dataset DATA --job JOB --allow-python-override --output-format json \\
        -o OUT/<case>-report [--oracle-field F]

and one summary line per case: exit status, codes, the oracle's mean, the best content-free
reply, dead rows, disagreeing repeats and load failures. Cases with a ``variant`` change the
rows first (e.g. spartqa's rows with ``expected_answer`` instead of the ``target`` its verify
request declares: Gym's own wrong-field trap). Rerunning reuses the built packages under
``--out`` and the cached server venvs. A server whose entrypoint exports Gym's
``VERIFIER_FIXTURE`` also gets a line for its verifier cases (the probe's fixture phase, EK809).

Disk: each probe copies the whole package (~390 MB of vendored wheels for these servers) into
``~/.cache/envkit/runs`` while it runs; keep ~1 GB free per case.

Recorded (branch probe-verifiers, 2-core machine shared with five other sessions, load 8-18):

- ``equivalence_rule``: exit 1, EK804 -- every reply, each oracle rendering included, scored
  0.0 on all 5 rows (5/5 dead); no load failure up to 8 in flight (p99 1.0 s, environment time
  per step 0.76 s); no verifier fixture. Doubtful as a finding about the server: rows 4-5 have
  ``expected_answer: "6"`` and ``grading_rule: exact``, so the bare oracle should score 1.0
  there; the rows are 9-15 kB long-context prompts, and the likelier cause is the scripted
  reply not being matched to them (to be checked in the scoring phase).
- ``example_single_tool_call``, ``aegis_v4_safety``, ``equivalence_llm_judge`` (the three 0.7.0
  servers with a fixture; ``tests/probe/test_fixture_phase_gym.py``): the fixture phase in
  their packaged venvs. example_single_tool_call: 3 of 3 cases pass (1.0, 0.0, raises), the
  cases read from the dataset directory ``envkit build`` moved them to. aegis_v4_safety and
  equivalence_llm_judge **as built: every case fails, one EK809** -- their fixture factories
  read ``benchmarks/aegis_v4_safety/config.yaml`` / ``benchmarks/hle_verified/config.yaml`` and
  ``benchmarks/hle/prompts/judge.txt`` from Gym's tree, which a package built from the server
  dir does not carry; with those files added, 3 of 3 pass each, and ``gym env test
  aegis_v4_safety`` / ``hle_verified`` gives the same verdict and rewards per case.
- ``string_match``, ``mcqa``, ``hotpotqa_qa``, ``spartqa_expected_answer_rows``,
  ``xlam_fc_no_expected_answers`` and the full probe of ``example_single_tool_call``: no
  verdict -- the shared disk was full (0.2-0.8 GB free); the copy into ``runs/`` or the venv
  install failed with ENOSPC, which envkit reported as EK406 ("a requirement excludes this
  Python") or as an internal error. Rerun on a machine with disk to spare.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}
JOB = {"model": "default/m", "dataset": "default/d", "environment": "default/e",
       "training": {"type": "grpo", "finetuning_type": "all_weights", "max_seq_length": 1024,
                    "max_new_tokens": 512, "temperature": 1.0, "batch_size": 8,
                    "micro_batch_size": 8, "num_generations_per_prompt": 4, "epochs": 1}}


def _to_expected_answer(row: dict[str, Any]) -> dict[str, Any]:
    """spartqa's rows as a user who followed the common convention writes them."""
    out = {k: v for k, v in row.items() if k not in ("target", "verifier_metadata")}
    out["expected_answer"] = row.get("target")
    return out


def _without_expected_answers(row: dict[str, Any]) -> dict[str, Any]:
    """xlam_fc rows without the calls the verifier compares against (its default: [])."""
    return {k: v for k, v in row.items() if k != "expected_answers"}


@dataclass(frozen=True)
class Case:
    name: str
    server: str
    oracle_field: str | None = None
    variant: Callable[[dict[str, Any]], dict[str, Any]] | None = None


CASES = (
    Case("equivalence_rule", "equivalence_rule"),
    Case("string_match", "string_match"),
    Case("mcqa", "mcqa"),
    Case("gpqa_diamond", "gpqa_diamond"),
    Case("hotpotqa_qa", "hotpotqa_qa"),
    Case("lc_niah", "lc_niah"),
    Case("spartqa", "spartqa", oracle_field="target"),
    Case("spartqa_expected_answer_rows", "spartqa", variant=_to_expected_answer),
    Case("xlam_fc", "xlam_fc", oracle_field="expected_answers"),
    Case("xlam_fc_no_expected_answers", "xlam_fc", variant=_without_expected_answers),
    Case("example_single_tool_call", "example_single_tool_call"),
)


def _envkit(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envkit", *args], capture_output=True,
                          text=True, env=ENV, timeout=timeout, check=False, cwd=ROOT)


def _site_packages() -> Path:
    from envkit.gym.venv import ensure_gym_venv

    venv = ensure_gym_venv("0.7.0", allow_python_override=True)
    return next(venv.root.glob("lib/python3.*/site-packages"))


def _agent(pkg: Path) -> str:
    from envkit.model.package import load_package
    from envkit.probe.analysis.declared import agent_locations

    agents = sorted(agent_locations(load_package(pkg)))
    return next((a for a in agents if a.endswith("_simple_agent")), agents[0])


def _prepare(case: Case, site: Path, out: Path) -> tuple[Path, Path, Path]:
    pkg = out / case.server
    if not (pkg / "nemo-environment.yaml").exists():
        proc = _envkit("build", str(site / "resources_servers" / case.server), "--format",
                       "wheels-v1", "--arch", "x86_64", "-o", str(pkg))
        if proc.returncode != 0:
            raise SystemExit(f"{case.server}: build failed\n{proc.stderr[-3000:]}")
    agent = _agent(pkg)
    data = out / f"{case.name}-data"
    data.mkdir(parents=True, exist_ok=True)
    example = site / "resources_servers" / case.server / "data" / "example.jsonl"
    rows = []
    for line in example.read_text().splitlines():
        row = json.loads(line)
        row.setdefault("agent_ref", {"type": "responses_api_agents", "name": agent})
        rows.append(case.variant(row) if case.variant else row)
    (data / "training.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    job = out / "job.json"
    job.write_text(json.dumps(JOB, indent=2))
    return pkg, data, job


def _summary(case: Case, rc: int, report: dict[str, Any]) -> str:
    parts = [f"{case.name}: exit {rc}, stage {report['stage']}, codes {report['codes'] or '-'}"]
    for agent in report["agents"]:
        means = {p["policy"]: p["mean"] for p in agent["policies"]}
        free = {k: v for k, v in means.items() if not k.startswith("oracle") and v is not None}
        best = max(free, key=lambda k: free[k]) if free else None
        failed = sum(p["failed"] for p in agent["policies"])
        oracle = f"{agent['oracle']} {means.get(agent['oracle'])}" if agent["oracle"] else "-"
        parts.append(
            f"oracle {oracle}; best content-free {best} {free.get(best or '')}; dead "
            f"{len(agent['dead_rows'])}/{len(agent['judged_rows'])}; unstable "
            f"{len(agent['unstable'])}; failed rollouts {failed}")
    if report["load"]:
        load = report["load"]
        fails = {lv["concurrency"]: lv["failed"] for lv in load["levels"] if lv["failed"]}
        p99 = load["levels"][-1]["p99_s"] if load["levels"] else None
        parts.append(f"load failures {fails or 'none'}; p99 at {load['concurrency']} "
                     f"{p99}s; step {load['projected_step_s']}s")
    for server in (report["phases"].get("fixtures") or {}).get("servers", []):
        marks = {True: "ok", False: "FAIL", None: "skip"}
        cases = ", ".join(f"{c['name']} {marks[c['passed']]} {c['observed']}"
                          for c in server["cases"])
        parts.append(f"Gym verifier fixture {server['server']}: "
                     f"{'passed' if server['passed'] else 'failed'} ({cases or server['message']})")
    for d in report["diagnostics"]:
        parts.append(f"  {d['code']} {d['severity']}: {d['message'][:240]}")
    return "\n  ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", help=f"default: all of {[c.name for c in CASES]}")
    parser.add_argument("--out", type=Path, default=Path("/tmp/envkit-probe-real"))
    args = parser.parse_args()
    chosen = [c for c in CASES if not args.cases or c.name in args.cases]
    site = _site_packages()
    for case in chosen:
        pkg, data, job = _prepare(case, site, args.out)
        extra = ["--oracle-field", case.oracle_field] if case.oracle_field else []
        proc = _envkit("probe", str(pkg), "--dataset", str(data), "--job", str(job),
                       "--allow-python-override", "--output-format", "json", "-o",
                       str(args.out / f"{case.name}-report"), *extra)
        try:
            report = json.loads(proc.stdout)
        except json.JSONDecodeError:
            print(f"{case.name}: exit {proc.returncode}, no report\n{proc.stderr[-2000:]}")
            continue
        if "agents" not in report:  # an error object (usage, internal)
            print(f"{case.name}: exit {proc.returncode}: {report.get('error')}")
            continue
        print(_summary(case, proc.returncode, report), flush=True)


if __name__ == "__main__":
    main()
