"""``parse_yaml``: the fast constructor gives PyYAML's values, and bad input never raises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from support.fuzz_strategies import yaml_documents
from support.paths import REPO_ROOT

from envkit.model import yamlio
from envkit.model._yamlnodes import TooLarge
from envkit.model.yamlio import YamlReadError, parse_yaml, read_mapping

FIXTURES = REPO_ROOT / "fixtures"
DOCS = [
    "a: 1\nb: [1, 2.5, true, null, ~, 0x1f, 0o17, 1_000, .inf, -.nan, 2001-12-14, 'x', \"y\"]\n",
    "x: &a {k: v}\ny: *a\nz:\n  <<: *a\n  w: 1\n",  # merge key: PyYAML's path
    "? [a, b]\n: 1\n",  # unhashable key: PyYAML's error
    "- !!binary aGVsbG8=\n- !!set {a, b}\n",
    "a: 1\na: 2\n",
    "",
    "just a string",
    "[1, [2, [3]]]",
    "k: !!str 12\nj: !!int '7'\n",
    "{1: a, 1.5: b, true: c, null: d}",
    "a: !custom x\n",
    "a: " + "[" * 900 + "]" * 900 + "\n",  # deeper than Python's recursion: PyYAML's path
    "t: 2001-12-14t21:59:43.10-05:00\n",
]
DOCS += [p.read_text() for p in sorted(FIXTURES.glob("packages/valid-*/pkg/**/*.yaml"))]


def _pyyaml(text: str) -> tuple[object, bool]:
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), False
    except yaml.YAMLError:
        return None, True


@pytest.mark.parametrize("text", DOCS, ids=range(len(DOCS)))
def test_same_values_as_pyyaml(text: str) -> None:
    ours = parse_yaml("x.yaml", text.encode())
    data, failed = _pyyaml(text)
    assert (ours.error is not None) == failed
    if not failed:
        assert repr(ours.data) == repr(data)  # repr: nan != nan


def test_aliases_share_one_object() -> None:
    doc = parse_yaml("x.yaml", b"x: &a {k: v}\ny: *a\n")
    assert doc.data["x"] is doc.data["y"]


def test_line_numbers() -> None:
    doc = parse_yaml("x.yaml", b"a:\n  b:\n    - 1\n    - c: 2\n")
    assert doc.line_of("a") == 1 and doc.line_of("a", "b", 1, "c") == 4
    assert doc.line_of("a", "missing") == 1


BOMB = b'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
    f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n".encode()
    for i in range(8)
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"- a\n- b\n", "expected a mapping at the top level, found a list"),
        (b"", "found empty"),
        (b"a: [1,\n", "m.yaml:2: invalid YAML"),
        (b"\xff\xfe", "not UTF-8"),
        (BOMB, "alias bomb"),
    ],
)
def test_read_mapping_errors_name_the_file_and_line(
    tmp_path: Path, raw: bytes, expected: str
) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(raw)
    with pytest.raises(YamlReadError, match=re.escape(expected)):
        read_mapping(path, "m.yaml")


def test_read_mapping_missing_file_and_success(tmp_path: Path) -> None:
    with pytest.raises(YamlReadError, match="cannot read"):
        read_mapping(tmp_path / "absent.yaml")
    (tmp_path / "ok.yaml").write_text("format: wheels-v1\n")
    assert read_mapping(tmp_path / "ok.yaml") == {"format": "wheels-v1"}


def test_builder_reads_the_manifest_within_the_validators_bounds(tmp_path: Path) -> None:
    from envkit.builder.build import BuildError, _read_manifest

    (tmp_path / "nemo-environment.yaml").write_bytes(BOMB)
    with pytest.raises(BuildError, match="alias bomb"):
        _read_manifest(tmp_path)


# -- positions from the first parse ---------------------------------------------------------

EXTRA = [
    "a: 1\na: {b: 2}\n",  # a repeated key: the later value, the first line
    "'1': x\n1: y\n\"q\": z\n",
    "? a\n: 1\n",
    "a: |\n  block\n  text\nb: >-\n  folded\n",
    "---\na: 1\n...\n",
    "---\na: 1\n---\nb: 2\n",  # two documents: the composer's error
    "a: &x 1\nb: *x\n",
    "a: !!str 1\n",
    "a: <<\n",
    "- - - x\n  - y\n- z\n",
    "a: 0x" + "f" * 200 + "\nb: [\n",  # a constructor error before a syntax error
]


def _node_path(text: str) -> tuple[object, ...]:
    try:
        doc = yamlio._compose_nodes("x.yaml", text)
    except (yaml.YAMLError, TooLarge) as exc:
        return ("error", type(exc).__name__, str(exc))
    return repr(doc.data), dict(doc.lines), dict(doc.columns)


def _event_path(text: str) -> tuple[object, ...]:
    try:
        doc = yamlio._compose("x.yaml", text)
    except (yaml.YAMLError, TooLarge) as exc:
        return ("error", type(exc).__name__, str(exc))
    return repr(doc.data), dict(doc.lines), dict(doc.columns)


@pytest.mark.parametrize("text", DOCS + EXTRA, ids=range(len(DOCS + EXTRA)))
def test_event_path_reads_what_the_node_path_reads(text: str) -> None:
    """The fast reader and the node tree agree on values, lines and columns (or the error)."""
    assert _event_path(text) == _node_path(text)


@settings(max_examples=80, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(doc=yaml_documents(("format", "config_paths", "metadata")))
def test_event_path_agrees_on_generated_documents(doc: bytes) -> None:
    try:
        text = doc.decode("utf-8-sig")
        yamlio._check_nesting(doc, text)
    except (UnicodeDecodeError, yaml.YAMLError, TooLarge):
        return
    assert _event_path(text) == _node_path(text)


def test_columns_of_keys_and_items() -> None:
    doc = parse_yaml("x.yaml", b"a:\n  b:\n    - 1\n    - c: 2\n      d: [x, y]\n")
    assert dict(doc.columns) == {1: 1, 2: 3, 3: 7, 4: 7, 5: 7}
    assert doc.column_at(5) == 7 and doc.column_at(9) is None


@pytest.mark.parametrize(("raw", "line", "column"), [
    (b"a: 1\nb: [1, 2\n", 3, 1),
    (b"a: 1\n\tb: 2\n", 2, 1),
    (b"a: 1\nb: \xff\n", 2, 4),
    (b'a: 1\nb: "\\U00110000"\n', 2, 7),  # libyaml marks the escape
])
def test_errors_carry_the_parsers_line_and_column(raw: bytes, line: int, column: int) -> None:
    doc = parse_yaml("x.yaml", raw)
    assert doc.error is not None
    assert (doc.error_line, doc.error_column) == (line, column)
    assert doc.column_at(line) == column


@pytest.mark.parametrize("indicators", [0, 6_000, 60_000])
def test_control_character_is_located_however_many_indicators(indicators: int) -> None:
    """libyaml's ``ReaderError`` is no ``MarkedYAMLError``: past the nesting pre-screen it
    escaped the reader (exit 2); below it the same byte was an error without a line."""
    raw = b"a: 1\nb: x\x01y\nc: " + b"[" * indicators + b"]" * indicators + b"\n"
    doc = parse_yaml("x.yaml", raw)
    assert doc.error is not None and "'\\x01' is not allowed" in doc.error
    assert (doc.error_line, doc.error_column) == (2, 5)


def test_out_of_range_escape_with_the_pure_python_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without libyaml the scanner calls ``chr(0x110000)``: a ``ValueError``, not YAMLError."""

    class PureLoader(yaml.SafeLoader):
        yaml_constructors = yamlio.Loader.yaml_constructors

    monkeypatch.setattr(yamlio, "Loader", PureLoader)
    doc = parse_yaml("x.yaml", b'a: "\\U00110000"\n')
    assert doc.error is not None and doc.error.startswith("invalid YAML")
    doc = parse_yaml("x.yaml", b"a: x\x01\n")  # the pure-Python reader checks in __init__
    assert doc.error is not None and doc.error_line == 1


def test_node_count_is_bounded_before_the_composer_sees_the_nodes() -> None:
    """A 2M-item flow list (4 MB) has no nesting indicators; the composer resolved every
    item in Python before the 200k-node bound applied (tens of seconds, 620 MB)."""
    raw = b"a: [" + b"1," * 2_000_000 + b"1]]}\n"
    doc = parse_yaml("x.yaml", raw)
    assert doc.error is not None and "nodes; not parsed" in doc.error
