"""``@record``: envkit's frozen dataclass, with half the code ``dataclasses`` compiles per class.

Why: on CPython 3.11 ``dataclasses`` writes each method it adds as source text and compiles it
with its own ``exec`` (~60 us each): a frozen dataclass gets six (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``). The 31 records a validate process
defines took 12.6 ms of its ~49 ms of imports, a quarter of a pre-commit hook's whole run over
a small package, and every process of a tree run pays it before it forks. ``__eq__``,
``__hash__`` and ``__repr__`` depend on a class only through its field names, so here they are
built from those names without compiling anything; ``__init__`` and the frozen
``__setattr__``/``__delattr__`` are still ``dataclasses``' own, so construction, defaults,
``__post_init__``, ``dataclasses.replace``/``fields``/``asdict`` and ``FrozenInstanceError``
are unchanged.

What a record compares, hashes and prints is what ``@dataclass(frozen=True)`` would: the same
fields (``compare=``, ``hash=``, ``repr=`` honoured) as one tuple, equal only to an instance of
the very same class, printed as ``Name(a=1, b='x')`` and ``...`` for a record inside itself. A
method the class defines itself is kept, as ``dataclasses`` keeps it. Type checkers read the
decorator as a frozen dataclass (PEP 681).
"""

from __future__ import annotations

import dataclasses
import reprlib
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform, overload

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["record"]

_T = TypeVar("_T")


@overload
def record(cls: type[_T], /) -> type[_T]: ...


@overload
def record(*, kw_only: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[_T] | None = None, /, *, kw_only: bool = False) -> Any:
    """``@record`` or ``@record(kw_only=True)``: ``@dataclass(frozen=True)`` (see the module)."""
    def wrap(cls: type[_T]) -> type[_T]:
        return _add_methods(dataclasses.dataclass(cls, frozen=True, eq=False, repr=False,
                                                  kw_only=kw_only))
    return wrap if cls is None else wrap(cls)


def _add_methods(cls: type[_T]) -> type[_T]:
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    compared = _values([f.name for f in fields if f.compare])
    hashed = _values([f.name for f in fields if (f.compare if f.hash is None else f.hash)])
    shown = tuple(f.name for f in fields if f.repr)

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(compared(self) == compared(other))
        return NotImplemented

    def __hash__(self: Any) -> int:
        return hash(hashed(self))

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        shows = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({shows})"

    own = cls.__dict__
    # a body that defines __eq__ sets __hash__ to None: that one is still generated, as in
    # dataclasses; a __hash__ the body wrote itself is kept
    explicit_hash = own.get("__hash__") is not None
    for method in (__eq__, __hash__, __repr__):
        name = method.__name__
        if name in own and not (name == "__hash__" and not explicit_hash):
            continue
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, method)
    return cls


def _values(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields ``names`` of a record as one tuple (``attrgetter``: no Python frame per field)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()
