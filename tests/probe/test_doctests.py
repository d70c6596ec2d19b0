"""The probe's pure modules carry worked examples as doctests: run them."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ("analysis.job", "policies", "analysis.observations", "analysis.integrity",
           "analysis.zero_variance", "analysis.load", "analysis.verdicts",
           "analysis.declared", "phases.scoring", "phases.reasoning", "phases.session")


def test_tool_call_parser_doctests() -> None:
    module = importlib.import_module("envkit.policy_server.tool_calls")
    failed, attempted = doctest.testmod(module)
    assert attempted > 0 and failed == 0


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(f"envkit.probe.{name}")
    failed, attempted = doctest.testmod(module)
    assert attempted > 0 and failed == 0
