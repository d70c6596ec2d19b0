"""``parse_yaml``: the fast constructor gives PyYAML's values, and bad input never raises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from support.paths import REPO_ROOT

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
