"""The line reader gives exactly what the event reader gives, or leaves the document to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envkit.model import _yamlparse, yamlio
from envkit.model._yamlcore import MAX_NODES, TooLarge, Unusual
from envkit.model._yamlevents import read_events, resolve_scalar
from envkit.model._yamllines import read_lines
from envkit.model._yamlnodes import Loader
from envkit.model._yamlscalars import plain_value

LISTED = "".join(f"  - configs/c{i}.yaml\n" for i in range(50))
ACCEPTED = [
    f"value_1: 1\nconfig_paths:\n{LISTED}",  # the fan-out shape: must stay on the line reader
    "a: 1\nb: -2\nc: 0x1f\nd: 1_000\ne: 1:30\nf: 2001-12-14\ng: .inf\nh: -.nan\ni: ~\nj: no\n",
    "a:\nb: x\n",  # `a:` alone is null
    "a:\n  b:\n    c: 1\n  d:\n    - x\n    - 2\n    - true\n    - y z\ne: http://h/p\n",
    "\n\na: 1\n\n\nb:\n\n  - x\n\n  - y\n",  # blank lines anywhere
    "a:\n    - x\n    - Null\n    - -y\n    - (p)\n    - $v\n    - ~/p\n    - 12:30:00\n",
    "true: 1\nTrue: 2\nnull: 3\non: 4\n",  # resolved keys, raw key paths
    "a: 1",  # no final newline
    "a:\n " + "b:\n  " + "c: 1\n",  # one-space indents
    "# head\na: 1  # one\n  # indented\nb:   # a key with a comment\n  - x # item\n# c\n  - y\n",
    "a:\n- x\n- 2\nb:\n  c:\n  - z\n  d: 1\n",  # sequences at their key's indent
    "a:\n  b: 1\n   \n\n  c: 2\n",  # a line of spaces is blank
    "a: x#y\n".replace("x#y", "x") + "b: #\n",  # an empty comment; `b:` null
    # quotes, brackets, braces and commas inside a plain value (never first)
    "a: it's\nb: ${policy_base_url}\nc: x[0], y{1}\nd: say \"hi\"\ne:\n  - f(a, b)\n",
]
REJECTED = [
    "a: 1 #\x01\n", "# \x7f\na: 1\n", "a: 1 #é\n", "a: x#y\n", "a:#c\n", "- x # c\n",
    "a:\n- x\n - y\n",  # a continuation of the item
    "a:\n  b:\n- x\n",  # a dedent to no open block
    "a: 'q'\n", "a: [1, 2]\n", "a: {b: 1}\n",
    "a: 1\na: 2\n",  # a repeated key: the event reader keeps the first line
    "a: x\n  y\n",  # a continuation line
    "a:\n  - b: 1\n", "a:\n  - - x\n", "- x\n", "  a: 1\n", "x\n", "", "\n\n",
    "a: x \n", "a:  \n", "a:\tb\n", "a: 1\r\n", "a: é\n", "a: =\n", "a: 0x" + "f" * 200 + "\n",
    "a:\n  b: 1\n c: 2\n",  # a dedent to no open block
    "a:\n  - x\n  b: 1\n", "a:\n  -  x\n", "a:\n  -\n", "a: b: c\n", "---\na: 1\n", "a:b\n",
    "a: 'q' x\n", "a: \"q\"\n", "a: {x\n", "a: [x\n", "a: ,x\n", "a:\n  - 'q'\n",
]


def _events(text: str) -> tuple[object, ...]:
    loader = Loader(text)
    try:
        data, lines, columns = read_events(loader)
    except Unusual:
        return ("unusual",)
    except (yaml.YAMLError, TooLarge) as exc:
        return ("error", type(exc).__name__, str(exc))
    finally:
        loader.dispose()
    return repr(data), lines, columns


def _lines(text: str) -> tuple[object, ...] | None:
    """The line reader with PyYAML's resolvers; the same without PyYAML, when that reads it."""
    loader = Loader(text)
    try:
        read = read_lines(lambda value: resolve_scalar(loader, value, (True, False), None), text)
    finally:
        loader.dispose()
    plain = read_lines(plain_value, text)
    if plain is not None:
        assert read is not None and (repr(plain[0]), plain[1], plain[2]) == (
            repr(read[0]), read[1], read[2])
    return None if read is None else (repr(read[0]), read[1], read[2])


@pytest.mark.parametrize("text", ACCEPTED, ids=range(len(ACCEPTED)))
def test_accepted_documents_read_as_the_events_read_them(text: str) -> None:
    ours = _lines(text)
    assert ours is not None
    assert ours == _events(text)


@pytest.mark.parametrize("text", REJECTED, ids=range(len(REJECTED)))
def test_anything_else_is_left_to_the_event_reader(text: str) -> None:
    assert _lines(text) is None


def test_over_the_node_bound_is_left_to_the_event_reader() -> None:
    text = "a:\n" + "  - x\n" * MAX_NODES
    assert _lines(text) is None
    assert _events(text)[0] == "error"


# -- generated documents ---------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "config_paths", "true", "null", "on", "x.y", "k-1", "_k"])
PLAIN = [
    "1", "-1", "+1", "1.5", "0x1f", "0o17", "1_000", "1:30", "2001-12-14", ".inf", "-.nan", "~",
    "null", "true", "no", "Tx", "ny", "configs/c1.yaml", "a b", "a:b", "http://x", "(x)", "$x",
    "~/p", "_", "", "it's", "${a.b}", "x,y", "a[0]", 'say "hi"', "f(a, b)", "n{}", "0'", "1,5",
    "yes,", "no'", "-[x", "-{x}", ".x", "-", "+x", "y[",
]
ODD = ["=", "-", "- x", "a #b", "a: b", "x ", "'q'", "[1]", "%x", "@x", "9" * 120, '"q"', "{x",
       "[x", ",x", "!x", "&x", "*x", "|x", ">x", "?x", "`x"]
VALUES = st.sampled_from(PLAIN * 6 + ODD)  # mostly inside the grammar, a few just outside


def _emit(node: Any, indent: int, step: int, out: list[str], tail: Callable[[], str],
          flat: bool) -> None:
    """Block YAML for ``node`` (a list of entries or a list of items), as a config writes it:
    ``tail`` gives each line's trailing comment (or none), ``flat`` puts a key's sequence at
    the key's own indent (as PyYAML's dumper writes it)."""
    pad = " " * indent
    kind, body = node
    for entry in body:
        if kind == "seq":
            out.append(f"{pad}- {entry}{tail()}")
            continue
        key, value = entry
        if isinstance(value, tuple):
            out.append(f"{pad}{key}:{tail()}")
            inner = indent if flat and value[0] == "seq" else indent + step
            _emit(value, inner, step, out, tail, flat)
        else:
            out.append(f"{pad}{key}: {value}{tail()}" if value else f"{pad}{key}:{tail()}")


_SEQ = st.tuples(st.just("seq"), st.lists(VALUES.filter(bool), min_size=1, max_size=6))
_KEY = {"unique_by": lambda entry: entry[0]}  # repeated keys: left to the event reader
_TREE = st.recursive(
    _SEQ | st.tuples(st.just("map"),
                     st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=4, **_KEY)),
    lambda inner: st.tuples(st.just("map"),
                            st.lists(st.tuples(KEYS, VALUES | inner), min_size=1, max_size=4,
                                     **_KEY)),
    max_leaves=12,
)
_MUTATIONS = st.lists(st.tuples(st.integers(0, 40), st.sampled_from(
    ["", " ", "  x", "- y", "# c", "   # c d", "#", " #\x01", "a: b#c", "a: 1 #\x7f"])),
    max_size=2) | st.just([])
_TRAILING = st.sampled_from(["", "", "", "", "", " # c", "  #", " #x: y"])
"""A line's trailing comment, if any (a rare bad one, ``#c`` or ``#\x7f``, is a mutation's)."""


@st.composite
def _documents(draw: st.DrawFn) -> str:
    root = draw(st.tuples(st.just("map"), st.lists(st.tuples(KEYS, VALUES | _TREE), min_size=1,
                                                   max_size=4, **_KEY)))
    out: list[str] = []
    _emit(root, 0, draw(st.sampled_from([1, 2, 4])), out, lambda: draw(_TRAILING),
          draw(st.booleans()))
    for at, insert in draw(_MUTATIONS):  # near misses: blank, stray and misplaced lines
        out.insert(at % (len(out) + 1), insert)
    return "\n".join(out) + draw(st.sampled_from(["\n", ""]))


@settings(max_examples=200, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(text=_documents())
def test_line_reader_agrees_with_the_event_reader(text: str) -> None:
    ours = _lines(text)
    assert ours is None or ours == _events(text)
    if ours is not None:  # and end to end, with the node tree
        doc = yamlio.parse_yaml("x.yaml", text.encode())
        nodes = _yamlparse._compose_nodes("x.yaml", text)
        assert (repr(doc.data), doc.lines, doc.columns) == (
            repr(nodes.data), nodes.lines, nodes.columns)
