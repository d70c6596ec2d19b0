#!/usr/bin/env bash
# Install envkit with its test extras into .venv and run the whole suite: the fast tests, then
# each slow group (what its tests need: platform, ray, train, gym, network) as its own pytest
# run, so the output says what each group costs. tests/support/ci_groups.py defines the groups;
# every test is in exactly one of them (pytest refuses a run where one is not), and with CI set
# a skipped test fails its run.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test,train,platform,docs]'
# An editable install leaves envkit's own sources uncompiled, and with PYTHONDONTWRITEBYTECODE
# set (CI machines, containers) no run writes their bytecode: every envkit process the suite
# starts (hundreds, Ray actors included) compiled them again. Compile them once, as a
# non-editable install does; a stale .pyc is never used (Python checks the source's mtime).
.venv/bin/python -m compileall -q -j 0 envkit converters trainer validators >/dev/null
# The layering contracts (pyproject.toml [tool.importlinter]) before any test runs.
.venv/bin/python scripts/lint_imports.py
# mypy ([tool.mypy]): strict on the model, the rules, the supply chain, the validate operation
# and the errors; the rest with mypy's defaults.
.venv/bin/python scripts/typecheck.py
# The rule reference site: pages current with the registry, a strict build, no dead link
# (the site, the rule URLs diagnostics print with docs-url set, every URL in the sources).
.venv/bin/python scripts/gen_rule_docs.py --check
.venv/bin/python -m mkdocs build --strict -q -d site
.venv/bin/python scripts/check_links.py site

# Every group runs even when an earlier one failed (CI reports all of them); the exit status
# is the first failure's. --durations: where each group's time goes.
# pytest's temp dirs go under a root of this run's own (PYTEST_DEBUG_TEMPROOT): every pytest
# session of the same user prunes /tmp/pytest-of-$USER/ to its last three, so on a shared machine
# another session deletes a running one's dirs. Each group's are removed when it ends (the slow
# groups write GBs of packages and venvs).
tmproot=$(mktemp -d "${TMPDIR:-/tmp}/envkit-ci.XXXXXX")
trap 'rm -rf "$tmproot"' EXIT
summary=() status=0 all=$SECONDS
for group in $(.venv/bin/python tests/support/ci_groups.py); do
    expr=$(.venv/bin/python tests/support/ci_groups.py "$group")
    printf '\n==> group %s: pytest -m "%s"\n' "$group" "$expr"
    start=$SECONDS rc=0
    mkdir "$tmproot/$group"
    PYTEST_DEBUG_TEMPROOT="$tmproot/$group" \
        .venv/bin/python -m pytest -m "$expr" -q --durations=15 || rc=$?
    rm -rf "${tmproot:?}/$group"
    summary+=("$(printf '%-9s %5ds  exit %d' "$group" "$((SECONDS - start))" "$rc")")
    if [[ $rc != 0 && $status == 0 ]]; then status=$rc; fi
done
printf '\n==> test groups (wall time, exit status)\n'
printf '%s\n' "${summary[@]}"
printf '%-9s %5ds  exit %d\n' "all" "$((SECONDS - all))" "$status"
exit "$status"
