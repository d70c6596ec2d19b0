"""Time ``envkit validate`` on an include fan-out (``python benchmarks/bench_include_fanout.py N``).

The shape (from the defects report): the manifest lists N Gym configs, and every one of them
lists all N again in its own ``config_paths`` (Gym's nested includes), so a package of N files
carries N x N include pairs. Each config is read and parsed once however many list it; what
must stay linear in the pairs is the rest: the reader's queue, Gym's merge order and the
EK316 include check.

Figures: ``benchmarks/RESULTS.md`` ("Include fan-out").
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import yaml

from envkit.converters.adapter_pkg import policy_model_config
from envkit.validate.validate import ValidateRequest, validate

POLICY = yaml.safe_dump(policy_model_config(), sort_keys=False)


def build(root: Path, n: int) -> None:
    """``configs/policy_model.yaml`` plus ``configs/c<i>.yaml`` for i < n, each listing all."""
    (root / "configs").mkdir(parents=True)
    paths = [f"configs/c{i}.yaml" for i in range(n)]
    listed = "".join(f"  - {p}\n" for p in paths)
    (root / "configs/policy_model.yaml").write_text(POLICY)
    for i in range(n):
        (root / f"configs/c{i}.yaml").write_text(f"value_{i}: {i}\nconfig_paths:\n{listed}")
    (root / "nemo-environment.yaml").write_text(
        "format: wheels-v1\nconfig_paths:\n  - configs/policy_model.yaml\n"
        f"{listed}metadata:\n  name: fanout\n"
    )
    (root / "wheels").mkdir()


def main(n: int = 1_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pkg"
        build(root, n)
        wall, cpu = time.perf_counter(), time.process_time()
        report = validate(ValidateRequest(package=root))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    codes = sorted({d.code for d in report.diagnostics})
    print(f"{n} configs x {n} includes: validate {wall:.2f} s wall, {cpu:.2f} s CPU, "
          f"peak RSS {peak:.0f} MB; codes {codes}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000)
