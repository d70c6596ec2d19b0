"""Run the doctests of the trainer's pure helpers (pytest collects only tests/)."""

from __future__ import annotations

import doctest

import pytest

pytest.importorskip("torch")

from envkit.output import render_results
from envkit.trainer import seeds
from envkit.trainer.generation import vllm


@pytest.mark.parametrize("module", [seeds, vllm, render_results], ids=lambda m: m.__name__)
def test_doctests(module: object) -> None:
    failed, attempted = doctest.testmod(module)  # type: ignore[arg-type]
    assert attempted > 0
    assert failed == 0
