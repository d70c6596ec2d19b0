#!/usr/bin/env bash
# Install envkit with its test extras into .venv and run the whole suite: fast tests, then the
# slow group (real Gym servers, uv resolution, Ray, training) as its own pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test,train,platform,docs]'
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
.venv/bin/python -m pytest -m "not slow" -q
# --durations: the slow group is most of CI's time (~19 of 21 min here); show where it goes
.venv/bin/python -m pytest -m slow -q --durations=25
