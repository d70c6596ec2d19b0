"""What ``envkit validate`` imports for a small native-v1 package (the pre-commit hook case).

Not a timing test: it pins the modules a start must not pay for. ``packaging`` compiles its
grammar's regexes at import (the largest single start-up cost measured), and the job, dataset
and lock models with the checks over them, ``importlib.resources`` and the other commands'
result types have nothing to read here (``benchmarks/bench_gate.py`` has the figures).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"

_PROBE = """
import contextlib, io, json, sys
from envkit.cli import main
sys.argv = ["envkit", "validate", sys.argv[1], "--offline"]
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        code = main()
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""

NOT_ON_THE_PATH = (
    "packaging",
    "envkit.model.closure",
    "envkit.model.jobfile",
    "envkit.model.dataset",
    "envkit.model.lock",
    "envkit.model.jobspec",  # the job's typed settings: only a job file needs them
    "envkit.validators.job.checks",
    "envkit.validators.dataset.checks",
    "envkit.validators.wheels.checks",  # a native-v1 package ships no wheelhouse
    "envkit.output.results",
    "importlib.resources",
    "hashlib",
    "subprocess",
    "difflib",  # did-you-mean: only a misspelt name needs it (close_matches)
    "signal",  # SIGTERM as an interrupt: only the commands that bring Gym up
    "logging",  # validate never logs (envkit.cli._common.LOGS_NOTHING): its result is its output
)


def _validate_small() -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(SMALL)], capture_output=True,
                          text=True, check=True)
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def test_small_native_package_validates_without_the_heavy_imports() -> None:
    result = _validate_small()
    assert result["code"] in (0, None), result["out"]
    assert "valid" in str(result["out"])
    modules = set(result["modules"])  # type: ignore[arg-type]
    loaded = sorted(m for m in modules for banned in NOT_ON_THE_PATH
                    if m == banned or m.startswith(banned + "."))
    assert not loaded, f"imported on the small-package path: {loaded}"
