"""``parse_yaml`` reads what PyYAML reads (Gym reads these files with PyYAML): the same value or
an error for the same documents, and the event reader's positions are the node tree's.

The corpus is the forms configs are written in (block mappings and sequences of plain, quoted,
flow and block scalars, comments, blank lines) and their near misses, plus generated documents
and edits of the corpus.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envkit.model import yamlio
from envkit.model._yamlnodes import MAX_NODES, Loader, TooLarge

LISTED = "".join(f"  - configs/c{i}.yaml\n" for i in range(50))
FORMS = [
    f"value_1: 1\nconfig_paths:\n{LISTED}",  # the fan-out shape
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
    # any printable character inside a plain value; `:` before one, `#` after one
    "a: x#y\nb: <a href='u'>|*&!?%@`;^\\</a>\nc: tool::Run\nd: a:b\ne: ???\nf: 1.17.11\n",
    "a: 1.0e-06\nb: 127.0.0.1\nc: =x\nd: <<x\n",
    # keys with paths and colons, quoted keys
    "conversational/simulation: 1\nistio.io/mode: none\nsim:example: env\n'*': allow\n"
    "\"b c\": 2\n'it''s': 3\n",
    # quoted values on one line, empty and one-line flow collections
    "a: 'q'\nb: \"r s\"\nc: 'it''s # not a comment'\nd: \"\"\ne: ''\nf: []\ng: {}\nh: [ ]\n"
    "i: [x, 1, true, ~, y z]\nj: [ a ,b ]  # c\nk:\n  - []\n  - {}\n  - [x, 2]\n  - 'q'\n",
    # plain values continued on more-indented lines
    "a: x\n  y z\n  w\nb: 1\n", "a:\n  b: one\n    two # c\n  c: 1\n  d: x\n   - y\n   [z] 'w'\n",
    "a: true\n  false\nb: 1\n  2\n",
    # quoted over lines: folded, blank lines kept, escapes
    "a: 'x  \n\n\n   y  '\nb: 'x\n  '\nc: 'a: b\n  # c\n  d''e'\n",
    "a: \"x\\\n   y\"\nb: \"x \\\n   y\\u2014z\\\"\\\\\\/\\n\\t\\ \"\nc: \"p\n\n   q\" # c\n",
    # block scalars: literal and folded, clip and strip
    "a: |\n  x\n   y\n\n  z\n\nb: >\n  x\n  y\n\n  z\nc: >-\n  x\n\n\n  y\nd: |-\n    # t\n    u\n",
    "a:\n  b: |\n    x\n  # c\n  d: 1\n",
    # text past ASCII inside values and comments
    "a: x \u2014 y  # \u2500\nb: 'caf\u00e9 \u00d7 2'\nc: \"\u2192\"\n"
    "d: x\n  \u00e9 \U0001f600\ne: 1 #\u00e9\n",
]
NEAR_MISSES = [
    "a: 1 #\x01\n", "# \x7f\na: 1\n", "a:#c\n", "- x # c\n",
    "a:\n- x\n - y\n",  # a continuation of the item
    "a:\n  b:\n- x\n",  # a dedent to no open block
    "a: {b: 1}\n", "a: [x,]\n", "a: [x, [y]]\n", "a: [a: b]\n", "a: [x\n  , y]\n",
    "a: 1\na: 2\n",  # a repeated key: the later value, the first line
    "a: x # c\n  y\n", "a: x\n  y # c\n  z\n",  # a comment ends a plain value
    "a: x\n\n  y\n", "a:\n  - x\n    y\n", "a: x\ny\n", "a: x\n  : y\n", "a: 'q'\n  r\n",
    "a:\n  - b: 1\n", "a:\n  - - x\n", "- x\n", "  a: 1\n", "x\n", "", "\n\n",
    "a: x \n", "a:  \n", "a:\tb\n", "a: 1\r\n", "a: é\n", "a: =\n", "a: 0x" + "f" * 200 + "\n",
    "a:\n  b: 1\n c: 2\n",  # a dedent to no open block
    "a:\n  - x\n  b: 1\n", "a:\n  -  x\n", "a:\n  -\n", "a: b: c\n", "---\na: 1\n", "a:b\n",
    "a: 'q' x\n", "a: {x\n", "a: [x\n", "a: ,x\n", "a: 'q\n", "a: 'q\n\n", "a: 'q\nr'\n",
    "a:\n  b: 'q\n  r'\n", "a: \"\\x41\"\n", "a: \"\\ud800\"\n", "a: \"\\u0001\"\n",
    "a: \"q\\\n\n  r\"\n", "a: |+\n  x\n", "a: |2\n  x\n", "a: | # c\n  x\n", "a: |\n\n  x\n",
    "a: |\nb: 1\n", "a: >\n  x\n    y\n", "a: |\n    x\n      \n", "a:\n  - |\n    x\n",
    "a: x\u2028y\n", "a: x\x85y\n", "a: x\ufeffy\n", "a: \u00e9\n", "\u00e9: 1\n",
    "'a': 1\n'a': 2\n", "'a'x: 1\n", "a: '''\n",
    "a: |\n  x\n    y",  # a block scalar's last line without its line break
]


def _pyyaml(text: str) -> tuple[object, ...]:
    """PyYAML's own composer and (guarded) constructor: the value, or that it is an error."""
    try:
        return ("ok", repr(yaml.load(text, Loader=Loader)))
    except yaml.YAMLError:
        return ("error",)


def _ours(text: str) -> tuple[object, ...]:
    doc = yamlio.parse_yaml("x.yaml", text.encode())
    return ("ok", repr(doc.data)) if doc.ok else ("error",)


def _positions(compose: Callable[[str, str], yamlio.YamlDoc], text: str) -> tuple[object, ...]:
    try:
        doc = compose("x.yaml", text)
    except (yaml.YAMLError, TooLarge) as exc:
        return ("error", type(exc).__name__)
    return repr(doc.data), dict(doc.lines), dict(doc.columns)


def _agrees(text: str) -> None:
    """The value (or the error) is PyYAML's; the events give the node tree's positions."""
    assert _ours(text) == _pyyaml(text)
    assert _positions(yamlio._compose, text) == _positions(yamlio._compose_nodes, text)


@pytest.mark.parametrize("text", FORMS, ids=range(len(FORMS)))
def test_config_forms_read_as_pyyaml_reads_them(text: str) -> None:
    assert _ours(text)[0] == "ok"
    _agrees(text)


@pytest.mark.parametrize("text", NEAR_MISSES, ids=range(len(NEAR_MISSES)))
def test_near_misses_read_as_pyyaml_reads_them(text: str) -> None:
    _agrees(text)


def test_over_the_node_bound_is_refused() -> None:
    doc = yamlio.parse_yaml("x.yaml", ("a:\n" + "  - x\n" * MAX_NODES).encode())
    assert doc.error is not None and "nodes; not parsed" in doc.error


# -- generated documents ---------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "config_paths", "true", "null", "on", "x.y", "k-1", "_k",
                        "a/b", "a:b", "'q k'", '"d"', "'it''s'"])
PLAIN = [
    "1", "-1", "+1", "1.5", "0x1f", "0o17", "1_000", "1:30", "2001-12-14", ".inf", "-.nan", "~",
    "null", "true", "no", "Tx", "ny", "configs/c1.yaml", "a b", "a:b", "http://x", "(x)", "$x",
    "~/p", "_", "", "it's", "${a.b}", "x,y", "a[0]", 'say "hi"', "f(a, b)", "n{}", "0'", "1,5",
    "yes,", "no'", "-[x", "-{x}", ".x", "-", "+x", "y[", "x#y", "<a href='u'>", "???", "a::b",
    "1.17.11", "1.0e-06", "x \u2014 y", "|x|", "a  b", "=x", "<<x",
]
TEXTS = [
    "'q'", '"q r"', "'it''s'", "''", '""', "[]", "{}", "[x, 1]", "[ y z ,true ]", "'a # b'",
    '"\\u00e9\\t\\"\\\\"', "'x\n@y'", "'x  \n\n@ y  '", "'x\n@'", '"a\\\n@b"', '"a\n\n@b"',
    "x\n@y z", "x\n@[y] - z", "|\n@x\n@ y\n\n@z", ">-\n@x\n@y\n\n\n@z", "|-\n@x", ">\n@x",
    "'x\n!y'", "x\n!y", "|\n!x", "'x\n@y' z", "|\n@x\n@  y", ">\n@x\n@  y", "x\n@y: z",
    '"a\\x41"', "'caf\u00e9'", "x\n@\u00e9",
]
"""Quoted, flow, continued and block values: ``@`` is a more-indented line's indent, ``!`` the
key's own (a near miss)."""
ODD = ["=", "-", "- x", "a #b", "a: b", "x ", "[1, [2]]", "%x", "@x", "9" * 120, "{x",
       "[x", ",x", "!x", "&x", "*x", "|x", ">x", "?x", "`x", "'q", '"q', "{a: b}", "[x,]"]
_PLAIN, _TEXTS, _ODD = st.sampled_from(PLAIN), st.sampled_from(TEXTS), st.sampled_from(ODD)
VALUES = st.one_of(_PLAIN, _PLAIN, _PLAIN, _TEXTS, _TEXTS, _ODD)
"""Mostly the forms configs use, a few near misses."""


def _emit(node: Any, indent: int, step: int, out: list[str], tail: Callable[[], str],
          flat: bool) -> None:
    """Block YAML for ``node`` (a list of entries or a list of items), as a config writes it:
    ``tail`` gives each line's trailing comment (or none), ``flat`` puts a key's sequence at
    the key's own indent (as PyYAML's dumper writes it)."""
    pad = " " * indent
    kind, body = node
    for entry in body:
        if kind == "seq":
            entry = entry.replace("\n@", f"\n{pad}    ").replace("\n!", f"\n{pad}")
            out.append(f"{pad}- {entry}{tail()}")
            continue
        key, value = entry
        if isinstance(value, tuple):
            out.append(f"{pad}{key}:{tail()}")
            inner = indent if flat and value[0] == "seq" else indent + step
            _emit(value, inner, step, out, tail, flat)
        else:
            value = value.replace("\n@", f"\n{pad}  ").replace("\n!", f"\n{pad}")
            out.append(f"{pad}{key}: {value}{tail()}" if value else f"{pad}{key}:{tail()}")


_SEQ = st.tuples(st.just("seq"), st.lists(VALUES.filter(bool), min_size=1, max_size=6))
_KEY = {"unique_by": lambda entry: entry[0]}
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


_PROPERTY = settings(max_examples=500, derandomize=True, deadline=None, database=None,
                     suppress_health_check=list(HealthCheck))
"""Both property tests: 500 examples, the same ones every run (CI's fast group)."""


@pytest.mark.filterwarnings("ignore:Generating overly large repr")  # the draws' record, not a bug
@_PROPERTY
@given(text=_documents())
def test_generated_documents_read_as_pyyaml_reads_them(text: str) -> None:
    _agrees(text)


_EDITS = [" ", "  ", "\n", "'", '"', ":", ": ", "#", " #", "-", "- ", "|", ">", "\\", "é", "[",
          "]", "{", "}", ",", "\n  ", "\n\n", "x", "1", "\\u00e9", "''", "\\\n"]


@st.composite
def _edited(draw: st.DrawFn) -> str:
    """A corpus document with a few characters inserted or deleted: near misses of every form
    (a quote or a fold cut short, an indent off by one)."""
    text: str = draw(st.sampled_from(FORMS))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()) and at < len(text):
            text = text[:at] + text[at + draw(st.integers(1, 3)):]
        else:
            text = text[:at] + draw(st.sampled_from(_EDITS)) + text[at:]
    return text


@_PROPERTY
@given(text=_edited())
def test_edited_documents_read_as_pyyaml_reads_them(text: str) -> None:
    _agrees(text)
