#!/usr/bin/env bash
# The four speed goals, each benchmark printing its figure, its anchor measured in the same run,
# the ratio and the load average; the RESULT lines are collected at the end.
#
#   scripts/bench.sh            # medians of 11 runs (smoke alone takes ~10 min warm)
#   scripts/bench.sh --quick    # 5 runs (smoke 5), about 8 min on a quiet 2-core machine
#   scripts/bench.sh --once     # one run each: that every benchmark still runs (no figure to quote)
#
# Needs the dev install (`pip install -e '.[test]'`) and PyPI once: the ray+openai wheelhouse
# (closure), the 145-package corpus (tree) and the Gym venv (smoke) are built on first use and
# cached under ~/.cache. The gate's benchmark installs a wheel of this checkout into a new venv
# on every run (its dependencies from pip's index or cache), as a hook or a CI job installs it.
# Run it on a quiet machine (load < 1): ratios survive load, figures not.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
QUICK=() CLOSURE_RUNS=() RUNS=()
[[ "${1:-}" == "--quick" ]] && QUICK=(--quick)
[[ "${1:-}" == "--once" ]] && CLOSURE_RUNS=(-n 1) RUNS=(--runs 1)
LOG=$(mktemp -t envkit-bench.XXXXXX)
trap 'rm -f "$LOG"' EXIT
echo "== $(date -u +%FT%TZ) $(uptime)" | tee -a "$LOG"
run() { echo "== $*" | tee -a "$LOG"; "$PY" "$@" "${QUICK[@]}" 2>&1 | tee -a "$LOG"; }
run benchmarks/bench_closure.py --arch aarch64 "${CLOSURE_RUNS[@]}"
run benchmarks/bench_gate.py "${RUNS[@]}"
run benchmarks/bench_smoke.py "${RUNS[@]}"
echo "== summary ($(uptime | sed 's/.*load/load/'))"
grep '^RESULT' "$LOG"
