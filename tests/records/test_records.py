"""``envkit.records.record`` behaves as ``@dataclass(frozen=True)``: the same equality, hash and
repr for the same fields and values (``compare=``/``hash=``/``repr=`` included), the same
construction, ``replace``, ``FrozenInstanceError``, and methods a class writes itself kept; and
every frozen record envkit defines is a ``record``, so none pays for the generated methods."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envkit.records import record

ROOT = Path(__file__).resolve().parents[2]

_FIELD = st.fixed_dictionaries({
    "compare": st.booleans(), "hash": st.sampled_from([None, True, False]),
    "repr": st.booleans(),
})
_VALUE = st.one_of(st.integers(), st.text(max_size=3), st.none(),
                   st.tuples(st.integers(), st.text(max_size=2)), st.frozensets(st.integers()))


def _local(text: str) -> str:
    """A repr without the ``test_x.<locals>.`` of a class declared in a test."""
    return text.rpartition("<locals>.")[2]


def _twins(options: list[dict[str, object]], kw_only: bool = False) -> tuple[type, type]:
    """One class declared twice: as ``@dataclass(frozen=True)`` and as ``@record``."""
    def body() -> dict[str, object]:
        names = {f"f{i}": object for i in range(len(options))}
        ns: dict[str, object] = {"__annotations__": names, "__doc__": "A twin."}
        ns.update({name: field(**opts) for name, opts in zip(names, options, strict=True)})  # type: ignore[call-overload]
        return ns

    plain = dataclasses.dataclass(frozen=True, kw_only=kw_only)(type("Twin", (), body()))
    ours = record(kw_only=kw_only)(type("Twin", (), body()))
    return plain, ours


@settings(max_examples=150, deadline=None)
@given(st.lists(_FIELD, max_size=4).flatmap(
    lambda fields: st.tuples(st.just(fields), st.lists(_VALUE, min_size=len(fields),
                                                       max_size=len(fields)),
                             st.lists(_VALUE, min_size=len(fields), max_size=len(fields)))))
def test_same_eq_hash_repr_as_a_frozen_dataclass(case: tuple[list, list, list]) -> None:
    options, one, other = case
    plain, ours = _twins(options)
    p1, p2, o1, o2 = plain(*one), plain(*other), ours(*one), ours(*other)
    assert repr(o1) == repr(p1)
    assert (o1 == o2) is (p1 == p2)
    assert (o1 != o2) is (p1 != p2)
    assert hash(o1) == hash(p1)
    assert (o1 == p1) is False  # another class, as between two dataclasses


def test_construction_replace_and_frozen_are_the_dataclass_ones() -> None:
    @record
    class Point:
        """A point."""

        x: int
        y: int = 0
        tags: tuple[str, ...] = field(default_factory=tuple, compare=False, repr=False)

        def __post_init__(self) -> None:
            if self.x < 0:
                raise ValueError("x")

    p = Point(1)
    assert (p, _local(repr(p))) == (Point(1, 0, ("t",)), "Point(x=1, y=0)")
    assert dataclasses.replace(p, y=2) == Point(1, 2)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "tags"]
    assert dataclasses.asdict(p) == {"x": 1, "y": 0, "tags": ()}
    assert Point.__match_args__ == ("x", "y", "tags")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(ValueError, match="x"):
        Point(-1)
    assert {p, Point(1, 0, ("other",))} == {p}


def test_keyword_only() -> None:
    @record(kw_only=True)
    class Options:
        """Options."""

        level: int

    assert Options(level=1) == Options(level=1)
    with pytest.raises(TypeError):
        Options(1)  # type: ignore[misc]


def test_a_record_inside_itself_prints_as_dots() -> None:
    @record
    class Node:
        """A node."""

        children: list[object]

    node = Node([])
    node.children.append(node)
    assert _local(repr(node)) == "Node(children=[...])"


def test_methods_the_class_writes_are_kept() -> None:
    @record
    class Loose:
        """Equal to everything."""

        x: int

        def __eq__(self, other: object) -> bool:
            return True

        def __repr__(self) -> str:
            return "loose"

    @record
    class Hashed:
        """Hashes to one."""

        x: int

        def __hash__(self) -> int:
            return 1

    assert Loose(1) == 2
    assert repr(Loose(1)) == "loose"
    assert hash(Loose(1)) == hash((1,))  # __eq__ written, __hash__ not: generated, as dataclasses
    assert hash(Hashed(5)) == 1
    assert Hashed(5) != Hashed(6)


def test_a_subclass_compares_its_own_fields() -> None:
    @record
    class Base:
        """A base."""

        a: int

    @record
    class Child(Base):
        """A child."""

        b: int = 0

    assert Child(1, 2) != Child(1, 3)
    assert Child(1) != Base(1)
    assert _local(repr(Child(1, 2))) == "Child(a=1, b=2)"


def test_no_frozen_dataclass_is_declared_without_record() -> None:
    """Every module of envkit (its installed folders included) declares frozen records with
    ``@record``: a ``@dataclass(frozen=True)`` would compile the three methods again."""
    found = [str(path.relative_to(ROOT))
             for folder in ("envkit", "validators", "converters", "trainer")
             for path in sorted((ROOT / folder).rglob("*.py"))
             if path != ROOT / "envkit" / "records.py"
             and re.search(r"dataclass\(\s*frozen\s*=\s*True", path.read_text("utf-8"))]
    assert found == []
