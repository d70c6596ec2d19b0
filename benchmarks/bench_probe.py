"""Benchmark: ``envkit probe`` next to ``envkit smoke`` on the bundled char_pattern package.

Package: the char_pattern toy built as wheels-v1 (``envkit build``, as ``scripts/demo.sh``
does), 16 rows (``fixtures/toy_envs.char_pattern_rows``, each with its reference answer
``expected_answer`` added so the oracle has something to say), the demo's job
``examples/tiny_grpo.json`` (batch_size 32: load levels 1..32). Both commands run as a user
runs them, process start -> exit, on the same warm server venvs, alternating so machine load
hits both alike. Printed: each one's time to verdict, the difference (goal: probe <= smoke +
30 s without a model), and each one's time outside Gym's own bring-up (``total - ready``, the
part that does not swing with the machine's load).

Run: ``.venv/bin/python benchmarks/bench_probe.py [--runs 2] [--offline]``.

Measured (2-core machine shared with other jobs, ``uptime`` load average 11.9 / 11.3 / 9.6
at the start, --runs 2):
    smoke time to verdict (median of 2): <see the lead's run>
(The figures are filled in below by the last run made for this file.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "fixtures/gym_trees/resources_servers/char_pattern"
JOB = ROOT / "examples/tiny_grpo.json"
sys.path.insert(0, str(ROOT / "fixtures"))

from toy_envs import char_pattern_rows, write_dataset  # noqa: E402

ENV = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}
GOAL_S = 30.0


def build(dest: Path) -> Path:
    subprocess.run([sys.executable, "-m", "envkit", "build", str(SRC), "--format", "wheels-v1",
                    "--arch", "x86_64", "-o", str(dest)], check=True, env=ENV,
                   stdout=subprocess.DEVNULL)
    return dest


def dataset(dest: Path) -> Path:
    rows = char_pattern_rows(16, chars="a")
    for row in rows:
        row["expected_answer"] = row["target_char"] * row["target_len"]
    return write_dataset(dest, rows)


def once(command: list[str]) -> tuple[float, float, dict]:
    """Wall time to verdict, the part of it outside Gym's bring-up, and the JSON report."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "envkit", *command, "--output-format", "json"],
                          env=ENV, check=False, capture_output=True, text=True)
    took = time.monotonic() - start
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    return took, took - report["timings"].get("ready_s", 0.0), report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--offline", action="store_true")
    args = parser.parse_args()
    offline = ["--offline"] if args.offline else []
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}",
          file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as tmp:
        pkg, data = build(Path(tmp) / "char-pattern"), dataset(Path(tmp) / "data")
        smoke_cmd = ["smoke", str(pkg), "--dataset", str(data), *offline]
        probe_cmd = ["probe", str(pkg), "--dataset", str(data), "--job", str(JOB), *offline]
        print("warming the server venvs (first run builds them)...", file=sys.stderr)
        once(smoke_cmd)
        smoke, probe, smoke_own, probe_own = [], [], [], []
        for i in range(args.runs):
            s, so, _ = once(smoke_cmd)
            p, po, report = once(probe_cmd)
            smoke.append(s)
            smoke_own.append(so)
            probe.append(p)
            probe_own.append(po)
            phases = {k: round(v, 1) for k, v in report["timings"].items()}
            print(f"run {i + 1}: smoke {s:.1f}s (outside bring-up {so:.1f}s)  probe {p:.1f}s "
                  f"(outside bring-up {po:.1f}s; {phases}; codes {report['codes']})",
                  file=sys.stderr)
    s, p = statistics.median(smoke), statistics.median(probe)
    so, po = statistics.median(smoke_own), statistics.median(probe_own)
    print(f"smoke time to verdict (median of {args.runs}): {s:.1f}s")
    print(f"probe time to verdict (median of {args.runs}): {p:.1f}s")
    print(f"difference, probe - smoke medians: {p - s:+.1f}s (goal <= +{GOAL_S:g} s): "
          f"{'met' if p - s <= GOAL_S else 'NOT met'}")
    # Gym's bring-up swings by minutes on a loaded machine; the rest does not.
    print(f"outside Gym's bring-up (median): smoke {so:.1f}s, probe {po:.1f}s, "
          f"difference {po - so:+.1f}s")


if __name__ == "__main__":
    main()
