"""The one shape every finding takes, from the manifest checks to the wheel closure.

Shaped like flake8's ``Violation`` (code, file, line, column, text) plus the fix hint and URL
that ruff's JSON output carries, so editors and CI annotations can consume it unchanged.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

from envkit.errors import UsageError

__all__ = ["RULE_PAGE", "Diagnostic", "SelectorError", "Severity", "close_matches",
           "parse_selectors", "rule_url", "selected"]

RULE_PAGE = "rules/{code}.html"
"""Where each rule's page sits in the rule reference site (``docs/``, built with MkDocs)."""


def rule_url(code: str, docs_url: str | None) -> str | None:
    """The page of ``code`` on the rule reference site at ``docs_url``, or None: envkit
    publishes no site of its own, so a built-in link would be dead.

    >>> rule_url("EK105", "https://docs.example.com/envkit")
    'https://docs.example.com/envkit/rules/EK105.html'
    >>> rule_url("EK105", None) is None
    True
    """
    if not docs_url:
        return None
    return f"{docs_url.rstrip('/')}/{RULE_PAGE.format(code=code)}"


class Severity(str, enum.Enum):  # noqa: UP042 - str mixin: JSON-serialisable, py3.11 floor
    ERROR = "error"
    WARNING = "warning"


class Diagnostic(NamedTuple):
    """One violation: where it is, what is wrong, and how to fix it."""

    code: str
    severity: Severity
    path: str
    """Path relative to the package (or dataset/job) root, POSIX separators; "" for the root."""
    line: int | None
    message: str
    hint: str
    column: int | None = None

    @property
    def input(self) -> str:
        """Which input ``path`` is relative to: EK5xx name dataset files, EK6xx the job file."""
        return {"EK5": "dataset", "EK6": "job"}.get(self.code[:3], "package")

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line or 0, self.column or 0, self.code)


def selected(code: str, select: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    """Prefix matching as ruff and flake8 do it: ``EK1`` selects every manifest rule.

    >>> selected("EK105", ("EK1",), ())
    True
    >>> selected("EK105", (), ("EK10",))
    False
    """
    if select and not code.startswith(select):
        return False
    return not (ignore and code.startswith(ignore))


class SelectorError(UsageError, ValueError):
    """A ``--select``/``--ignore`` value names no rule: a typo must not switch the gate off."""


def parse_selectors(values: Iterable[str], known: Iterable[str]) -> tuple[str, ...]:
    """``EK1,EK204`` and repeated values, upper-cased; every one must match a known code.

    A selector is a code or a prefix of one (``EK``, ``EK1``, ``EK10``, ``EK105``). An unknown
    one raises with the nearest known selector, as ruff refuses ``--select E999``.

    >>> parse_selectors(["ek1,EK204"], ["EK105", "EK204"])
    ('EK1', 'EK204')
    """
    prefixes = _prefixes(frozenset(known))
    out: list[str] = []
    for value in values:
        for raw in value.split(","):
            sel = raw.strip().upper()
            if not sel:
                continue
            if not re.fullmatch(r"EK\d{0,3}", sel) or sel not in prefixes:
                raise SelectorError(_unknown(raw.strip(), prefixes))
            out.append(sel)
    return tuple(dict.fromkeys(out))


@functools.lru_cache(maxsize=8)
def _prefixes(codes: frozenset[str]) -> frozenset[str]:
    """Every selector that names a rule of ``codes``: computed once per rule set, not once per
    package and setting."""
    return frozenset(code[:n] for code in codes for n in range(2, len(code) + 1))


def close_matches(word: str, candidates: Iterable[str], *, n: int = 1,
                  cutoff: float = 0.6) -> list[str]:
    """The "did you mean" of every diagnostic: ``difflib``'s closest ``candidates``
    (``difflib`` imported on first use: a clean run never needs it).

    >>> close_matches("temprature", ["temperature", "top_k"], cutoff=0.8)
    ['temperature']
    """
    import difflib

    return difflib.get_close_matches(word, list(candidates), n=n, cutoff=cutoff)


def _unknown(raw: str, prefixes: frozenset[str]) -> str:
    same_length = sorted(p for p in prefixes if len(p) > 2 and abs(len(p) - len(raw)) <= 1)
    near = close_matches(raw.upper(), same_length)
    maybe = f"; did you mean {near[0]!r}?" if near else ""
    return (f"unknown rule selector {raw!r}: no rule code starts with it{maybe} "
            "(`envkit rule --all` lists the codes)")
