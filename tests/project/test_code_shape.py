"""Library functions stay short enough to read in one screen (the developers' guide).

No function over 60 lines (counted from ``def`` to its last line, so click decorators do not
count) in the four library folders. Modules have no line limit: a module is as long as its
concept needs, and is cut by concept, not by a counter.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from support.paths import REPO_ROOT

ROOT = REPO_ROOT
LIBRARY = ("envkit", "validators", "converters", "trainer")
MAX_FUNCTION_LINES = 60


def _library_files() -> list[Path]:
    return sorted(p for folder in LIBRARY for p in (ROOT / folder).rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _long_functions(path: Path) -> dict[str, int]:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    return {
        f"{_rel(path)}::{node.name}": node.end_lineno - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    }


def test_no_library_function_is_over_the_line_limit() -> None:
    over = {name: n for path in _library_files() for name, n in _long_functions(path).items()}
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines: {over}"


_TIMING = re.compile(r"\b\d[\d.,]*\s?(?:ms|us|µs)\b|~\s?\d[\d.,]*\s?s\b|\bpaired\b|\bmedians?\b")
"""A timing figure (``12 ms``, ``~0.3 s``, "paired medians"): it belongs in
``benchmarks/RESULTS.md``, dated with its machine, where a later run can replace it."""


def test_no_timing_figures_in_library_code() -> None:
    found = [f"{_rel(path)}:{number}: {line.strip()}"
             for path in _library_files()
             for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
             if _TIMING.search(line)]
    assert not found, "timing figures in code (move them to benchmarks/RESULTS.md):\n" + (
        "\n".join(found))
