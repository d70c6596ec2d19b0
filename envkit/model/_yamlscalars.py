"""The values PyYAML's safe loader gives the plainest untagged scalars, decided without it.

``_yamllines`` reads a config's lines itself; what it cannot tell from a value's text alone is
whether one of YAML 1.1's implicit resolvers claims it (``true``, ``~``, ``8000``, ``0.7``).
For the forms configs use, the answer is decidable from a few exact spellings and a few simple
number shapes (decimal ints, floats with a signed exponent or none, digits with two dots or
more: a version or an address, a string), and that is all this module decides; any other value
that some resolver might claim (``0x1f``, ``1_000``, ``1:30``, ``2001-12-14``, ``.inf``,
``1e5``, ``<<``, ``=``) raises ``Unusual``, and the document is read again with PyYAML's own
resolvers. The tables are PyYAML's ``Resolver`` and ``SafeConstructor``
(``tests/model/test_yamlscalars.py`` compares every decision with PyYAML's on generated values,
and pins ``RESOLVED_FIRST`` to its table).
"""

from __future__ import annotations

from typing import Any

from envkit.model._yamlcore import Unusual

__all__ = ["RESOLVED_FIRST", "plain_value"]

RESOLVED_FIRST = frozenset([*"yYnNtTfFoO", *"-+0123456789.", "<", "~", "", "=", *"!&*"])
"""First characters some implicit resolver of the safe loader looks at (bool, float, int,
merge, null, timestamp, value, yaml); a plain scalar starting with any other character is a
string without asking them. ``""``: the empty scalar (null)."""

_BOOLS = {"yes": True, "Yes": True, "YES": True, "no": False, "No": False, "NO": False,
          "true": True, "True": True, "TRUE": True, "false": False, "False": False,
          "FALSE": False, "on": True, "On": True, "ON": True, "off": False, "Off": False,
          "OFF": False}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TAGGED = frozenset({"<<", "=", "!", "&", "*"})
_DIGITS = frozenset("0123456789")
_MAX_DIGITS = 18
"""Longer numbers go to PyYAML (its guard refuses integers over 100 characters)."""


def plain_value(value: str) -> Any:
    """The value of the plain scalar ``value`` (no tag, no quotes) as the safe loader gives it.

    :raises Unusual: a value only PyYAML's resolvers and constructors decide.
    """
    if value in _BOOLS:
        return _BOOLS[value]
    if value in _NULLS:
        return None
    if value in _TAGGED:
        raise Unusual  # `<<` is a merge key; `=`, `!`, `&`, `*` resolve to tags no one builds
    if value[0] in "yYnNtTfFoO~<=!&*":
        return value  # no resolver for these first characters matches anything else
    return _number(value)


def _number(value: str) -> Any:
    """A value starting with a sign, a digit or ``.``: a decimal int or a simple float, or a
    string no number resolver can match; anything else is PyYAML's."""
    unsigned = value[1:] if value[0] in "+-" else value
    if not unsigned or unsigned[0] not in _DIGITS:
        if unsigned[:1] == "." and (unsigned[1:2] in _DIGITS or unsigned[1:2] in ("_", "i", "I",
                                                                                  "n", "N")):
            raise Unusual  # .5, .inf, .nan and their spellings
        return value  # every number shape starts (after a sign) with a digit or "."
    if len(value) > _MAX_DIGITS:
        raise Unusual
    whole, dot, fraction = unsigned.partition(".")
    if not whole.isdigit() or not whole.isascii():
        raise Unusual  # 0x1f, 1_000, 1:30, 2001-12-14, 1e5, ...
    if not dot:
        if whole != "0" and whole.startswith("0"):
            raise Unusual  # octal
        return int(value)
    digits, e, exponent = fraction.replace("E", "e").partition("e")
    if not (digits.isdigit() and digits.isascii()) and (digits or not e):
        if fraction.replace(".", "").isdigit() and fraction.isascii():
            return value  # 127.0.0.1, 1.17.11: two dots, and every number shape has one
        raise Unusual
    if not e or (exponent[:1] in ("-", "+") and exponent[1:].isdigit() and exponent.isascii()):
        return float(value)  # 0.7, 1.0e-06, 1.e+5 (YAML 1.1 wants the dot and the sign)
    raise Unusual
