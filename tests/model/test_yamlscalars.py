"""``plain_value`` decides a plain scalar only where PyYAML's safe loader gives the same value,
and the plainest configs are read without importing PyYAML at all."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envkit.model._yamlcore import Unusual
from envkit.model._yamlevents import resolve_scalar
from envkit.model._yamlnodes import Loader
from envkit.model._yamlscalars import RESOLVED_FIRST, plain_value


def _pyyaml(value: str) -> object:
    loader = Loader("")
    try:
        return resolve_scalar(loader, value, (True, False), None)
    finally:
        loader.dispose()


def test_first_characters_are_pyyamls_table() -> None:
    table = Loader.yaml_implicit_resolvers
    assert None not in table  # no wildcard resolver: other first characters are strings
    assert frozenset(table) == RESOLVED_FIRST


SPELLINGS = ["yes", "Yes", "YES", "no", "NO", "true", "False", "on", "OFF", "y", "n", "nul",
             "null", "Null", "NULL", "~", "", "<<", "<", "=", "==", "!", "&", "*", "0", "-0",
             "+0", "7", "-12", "+5", "007", "0.5", "-0.0", "01.5", "1.", ".5", "-.5", ".inf",
             "-.Inf", ".NaN", ".x", ".", "-", "+", "-x", "1_000", "0x1f", "0o7", "0b1", "1:30",
             "1e5", "1.0e+5", "2001-12-14", "0.7.0", "12345678901234567890", "9" * 120, "nemo",
             "openai", "true_thing", "-foo", "1a", "١٢", "1²", "1.0e-06", "1.e-5", "1.0E+5",
             "1.5e+309", "1.0e5", "1.0e-", "127.0.0.1", "1.17.11", "1..2", "1.2.", "01.2.3",
             "1_0.2.3", "1.2.3e-5", "-1.2.3"]


def _agrees(value: str) -> None:
    """``plain_value`` leaves ``value`` to PyYAML, or gives PyYAML's value (type and repr)."""
    try:
        ours = plain_value(value)
    except Unusual:
        return
    theirs = _pyyaml(value)
    assert (type(ours), repr(ours)) == (type(theirs), repr(theirs))


@pytest.mark.parametrize("value", SPELLINGS)
def test_each_decided_spelling_is_pyyamls_value(value: str) -> None:
    _agrees(value)


def test_the_common_config_values_are_decided() -> None:
    """What configs hold (ports, flags, nulls, names, ratios) needs no PyYAML."""
    values = {"8000": 8000, "true": True, "no": False, "~": None, "": None, "0.7": 0.7,
              "-1": -1, "nemo_gym": "nemo_gym", "openai": "openai", "-x": "-x"}
    assert {v: plain_value(v) for v in values} == values


@settings(max_examples=3000, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(value=st.text(alphabet="0129-+._eExXbo:TtYyNnFfOo~<=!&*aZl ", max_size=8))
def test_generated_values_agree_with_pyyaml(value: str) -> None:
    _agrees(value)


def _yaml_imported(text: str) -> bool:
    code = ("import sys; from envkit.model.yamlio import parse_yaml; "
            f"doc = parse_yaml('x.yaml', {text.encode()!r}); assert doc.ok, doc.error; "
            "print('yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip() == "True"


def test_a_plain_config_is_read_without_pyyaml() -> None:
    assert not _yaml_imported("a:\n  port: 8000\n  name: it's ${x}\n  on: true\n"
                              "b:\n  - 0.5\n  - ~\n")
    assert _yaml_imported("a: 0x1f\n")  # a value only PyYAML decides
    assert not _yaml_imported("a: 'quoted'\nb: |\n  text\nc: [x, 1]\nd: x\n  y\n")
    assert _yaml_imported("a: {b: 1}\n")  # outside the line reader's grammar
