"""The benchmarks ``scripts/bench.sh`` runs still start: each imports and parses its options.

Why not a run: a benchmark is minutes of measurement with anchors of its own (Gym's bring-up,
``gym env resolve``, ``uv pip compile``), a figure for a quiet machine, not a check; what keeps
one from rotting between measurements is that its imports and its command line still work.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from support.paths import REPO_ROOT

BENCH_SH = REPO_ROOT / "scripts" / "bench.sh"
RUN = re.findall(r"^run (benchmarks/\S+\.py)", BENCH_SH.read_text("utf-8"), re.M)


def test_bench_sh_runs_the_benchmarks_of_the_speed_goals() -> None:
    assert RUN == ["benchmarks/bench_closure.py", "benchmarks/bench_gate.py",
                   "benchmarks/bench_smoke.py"]


@pytest.mark.parametrize("script", RUN)
def test_each_benchmark_starts(script: str) -> None:
    proc = subprocess.run([sys.executable, script, "--help"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--quick" in proc.stdout
