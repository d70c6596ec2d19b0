"""Run the doctests of the closure modules (pytest collects only tests/)."""

from __future__ import annotations

import doctest

import pytest

from envkit.model import closure, target, wheelfile


@pytest.mark.parametrize("module", [closure, target, wheelfile], ids=lambda m: m.__name__)
def test_doctests(module: object) -> None:
    failed, attempted = doctest.testmod(module)  # type: ignore[arg-type]
    assert attempted > 0
    assert failed == 0
