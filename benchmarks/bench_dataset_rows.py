"""Throughput and memory of the EK5xx dataset checks on a large generated dataset.

    python benchmarks/bench_dataset_rows.py [--rows 200000] [--bad-every 0]

Writes verifiers rows (converter shape) to a temp dir, validates them against the valid
adapter-wheels-v1 fixture package, and prints rows/s, max RSS (with --trace also the
tracemalloc peak) and the
number of diagnostics (capped at 20 per code per file + a summary line).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from envkit.model.dataset import load_dataset
from envkit.model.package import load_package
from envkit.validators import Inputs
from envkit.validators.dataset.checks import check_dataset_files, check_dataset_rows

PKG = Path(__file__).resolve().parent.parent / "fixtures/packages/valid-adapter-wheels-v1/pkg"


def _row(index: int, bad: bool) -> dict:
    return {
        "task_idx": 0 if bad else index,
        "vf_env_id": "reverse-text",
        "responses_create_params": {
            "input": [
                {"role": "system", "content": "Reverse the text character by character."},
                {"role": "human" if bad else "user", "content": f"sample text number {index}"},
            ]
        },
        "agent_ref": {"type": "responses_api_agents", "name": "verifiers_agent"},
        "question": f"sample text number {index}",
        "answer": f"{index} rebmun txet elpmas",
        "task": "reverse-text",
        "example_id": f"ex-{index}",
        "info": {},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--bad-every", type=int, default=0, help="every Nth row broken (0: none)")
    parser.add_argument("--trace", action="store_true", help="tracemalloc peak (slows it ~10x)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        with (data / "training.jsonl").open("w") as fh:
            for i in range(args.rows):
                bad = bool(args.bad_every) and i % args.bad_every == 0 and i > 0
                fh.write(json.dumps(_row(i, bad)) + "\n")
        size = (data / "training.jsonl").stat().st_size
        inputs = Inputs(package=load_package(PKG), dataset=load_dataset(data))
        if args.trace:
            tracemalloc.start()
        start = time.perf_counter()
        diags = [*check_dataset_files(inputs), *check_dataset_rows(inputs)]
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory() if args.trace else (0, 0)
        tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"rows={args.rows:,} file={size / 2**20:.1f} MiB time={elapsed:.2f}s "
        f"({args.rows / elapsed:,.0f} rows/s, {size / 2**20 / elapsed:.1f} MiB/s) "
        f"traced_peak={peak / 2**20:.1f} MiB max_rss={rss:.0f} MiB diagnostics={len(diags)}"
    )
    for d in diags[-3:]:
        print(f"  {d.path}:{d.line}: {d.code} {d.message}", file=sys.stderr)


if __name__ == "__main__":
    main()
