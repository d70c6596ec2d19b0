"""Field machinery for the job model: declare a field once, read JSON into it, emit its schema.

Why one walker: the validator, the trainer and ``envkit schema job`` must agree on every name,
type, range and default, so all three read :mod:`envkit.model.jobspec`'s dataclasses through this
module. Reading follows the platform's job model (pydantic, lax mode): unknown keys are
errors, numbers given as strings or integral floats are accepted and converted (the platform
does the same), a range is checked after conversion.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Mapping
from types import UnionType
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    NamedTuple,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["Problem", "json_schema", "read_object", "spec"]

_BOOL_WORDS = {**dict.fromkeys(("true", "t", "yes", "y", "on", "1"), True),
               **dict.fromkeys(("false", "f", "no", "n", "off", "0"), False)}
"""The strings pydantic's lax mode reads as booleans."""

_BOUNDS = {
    "gt": (">", "exclusiveMinimum", operator.gt),
    "ge": (">=", "minimum", operator.ge),
    "lt": ("<", "exclusiveMaximum", operator.lt),
    "le": ("<=", "maximum", operator.le),
}
"""Each bound's symbol, JSON Schema keyword and check (the check fails for NaN, as the
platform's does)."""
_KEYWORDS = {**{key: keyword for key, (_, keyword, _) in _BOUNDS.items()},
             "min_length": "minLength", "max_length": "maxLength"}
"""Each field bound's JSON Schema keyword."""


class Problem(NamedTuple):
    """One defect: ``kind`` is required | type | range | unknown | converted (a warning)."""

    path: tuple[str, ...]
    kind: str
    message: str


def spec(
    default: Any = dataclasses.MISSING, *, doc: str, factory: Any = None, **bounds: Any
) -> Any:
    """A dataclass field with its description and bounds (``gt``, ``ge``, ``lt``, ``le``,
    ``min_length``, ``max_length``)."""
    meta = {"doc": doc, **bounds}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _options(hint: Any) -> tuple[list[Any], bool]:
    """The non-None members of a type hint, and whether None is allowed."""
    if get_origin(hint) in (Union, UnionType):
        args = get_args(hint)
        return [a for a in args if a is not type(None)], type(None) in args
    return [hint], False


_Object = TypeVar("_Object", bound="DataclassInstance")


def read_object(cls: type[_Object], value: Any, path: tuple[str, ...]
                ) -> tuple[_Object | None, list[Problem]]:
    """``cls`` from a JSON object; ``(None, problems)`` when any problem is an error."""
    if not isinstance(value, Mapping):
        text = f"`{_dotted(path)}` is {_kind(value)}; expected an object"
        return None, [Problem(path, "type", text)]
    hints = get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    problems = [Problem((*path, str(key)), "unknown", "not a field of the job")
                for key in value if key not in known]
    kwargs: dict[str, Any] = {}
    for name, fld in known.items():
        where = (*path, name)
        if name not in value:
            if fld.default is dataclasses.MISSING and fld.default_factory is dataclasses.MISSING:
                problems.append(Problem(where, "required", f"`{_dotted(where)}` is required"))
            continue
        converted, found = _read_value(hints[name], value[name], where, fld.metadata)
        problems += found
        kwargs[name] = converted
    if any(p.kind != "converted" for p in problems):
        return None, problems
    return cls(**kwargs), problems


def _read_value(
    hint: Any, value: Any, where: tuple[str, ...], meta: Mapping[str, Any]
) -> tuple[Any, list[Problem]]:
    options, nullable = _options(hint)
    if value is None:
        text = f"`{_dotted(where)}` is null; expected {_name(options[0])}"
        return None, [] if nullable else [Problem(where, "type", text)]
    target = options[0]
    if isinstance(target, type) and dataclasses.is_dataclass(target):
        return read_object(target, value, where)
    converted, ok = _convert(target, value)
    if not ok:
        shown = repr(value) if isinstance(value, str | int | float) else _kind(value)
        text = f"`{_dotted(where)}` is {shown}; expected {_name(target)}"
        return None, [Problem(where, "type", text)]
    found = _range(converted, where, meta)
    if not found and _was_converted(value, converted):
        text = f"`{_dotted(where)}` is {value!r}; the platform reads it as {converted!r}"
        found = [Problem(where, "converted", text)]
    return converted, found


def _was_converted(value: Any, converted: Any) -> bool:
    """A string read as a number or boolean, a boolean read as a number, and the like."""
    if isinstance(value, list | dict) or type(value) is type(converted):
        return False
    return not (type(value) is int and type(converted) is float)


def _convert(target: Any, value: Any) -> tuple[Any, bool]:
    """Lax conversion as the platform's model does it; ``(value, False)`` when impossible."""
    origin = get_origin(target)
    if origin is Literal:
        return value, isinstance(value, str) and value in get_args(target)
    if origin in (tuple, list):
        ok = isinstance(value, list) and all(isinstance(x, str) for x in value)
        return (tuple(value) if ok else value), ok
    if target is bool:
        return _to_bool(value)
    if target is int:
        return _to_int(value)
    if target is float:
        return _to_float(value)
    if target is str:
        return value, isinstance(value, str)
    return value, isinstance(value, Mapping)  # Mapping[str, Any]


def _to_bool(value: Any) -> tuple[Any, bool]:
    if isinstance(value, bool):
        return value, True
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value), True
    if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
        return _BOOL_WORDS[value.strip().lower()], True
    return value, False


def _to_float(value: Any) -> tuple[Any, bool]:
    try:
        return float(value.strip() if isinstance(value, str) else value), True
    except (TypeError, ValueError):  # not a number (an object, a list, a word)
        return value, False


def _to_int(value: Any) -> tuple[Any, bool]:
    if isinstance(value, int):  # a bool too
        return int(value), True
    if isinstance(value, str):
        try:
            return int(value.strip()), True
        except ValueError:
            pass
    number, ok = _to_float(value)
    if ok and math.isfinite(number) and number == int(number):
        return int(number), True
    return value, False


def _range(value: Any, where: tuple[str, ...], meta: Mapping[str, Any]) -> list[Problem]:
    for key, (op, _, holds) in _BOUNDS.items():
        bound = meta.get(key)
        if bound is not None and not holds(value, bound):
            text = f"`{_dotted(where)}` is {value!r}; must be {op} {bound}"
            return [Problem(where, "range", text)]
    if isinstance(value, str) and len(value) < meta.get("min_length", 0):
        return [Problem(where, "range", f"`{_dotted(where)}` must not be empty")]
    if isinstance(value, str) and len(value) > meta.get("max_length", math.inf):
        return [Problem(where, "range", f"`{_dotted(where)}` is longer than {meta['max_length']}")]
    return []


def _name(target: Any) -> str:
    if get_origin(target) is Literal:
        return " or ".join(repr(a) for a in get_args(target))
    if get_origin(target) in (tuple, list):
        return "a list of strings"
    names = {int: "an integer", float: "a number", bool: "a boolean", str: "a string"}
    return names.get(target, "an object")  # a model dataclass or a mapping too


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), f"the number {value!r}")


# -- JSON Schema -------------------------------------------------------------------------------


def json_schema(cls: type) -> dict[str, Any]:
    """Draft 2020-12 schema of a model dataclass: closed objects, bounds, defaults, docs."""
    hints = get_type_hints(cls)
    props: dict[str, Any] = {}
    required = []
    for fld in dataclasses.fields(cls):
        props[fld.name] = _field_schema(hints[fld.name], fld)
        if fld.default is dataclasses.MISSING and fld.default_factory is dataclasses.MISSING:
            required.append(fld.name)
    schema: dict[str, Any] = {"type": "object", "description": (cls.__doc__ or "").strip()}
    if required:
        schema["required"] = required
    return {**schema, "properties": props, "additionalProperties": False}


def _field_schema(hint: Any, fld: dataclasses.Field[Any]) -> dict[str, Any]:
    options, nullable = _options(hint)
    target = options[0]
    is_object = isinstance(target, type) and dataclasses.is_dataclass(target)
    node = json_schema(target) if is_object else _leaf(target)
    if nullable:
        node = {"anyOf": [node, {"type": "null"}]} if "type" not in node else _or_null(node)
    node.update({keyword: fld.metadata[key] for key, keyword in _KEYWORDS.items()
                 if key in fld.metadata})
    node["description"] = fld.metadata.get("doc", "")
    if fld.default is not dataclasses.MISSING:
        node["default"] = list(fld.default) if isinstance(fld.default, tuple) else fld.default
    return node


def _or_null(node: dict[str, Any]) -> dict[str, Any]:
    kind = node["type"]
    node["type"] = [*kind, "null"] if isinstance(kind, list) else [kind, "null"]
    if "enum" in node:
        node["enum"] = [*node["enum"], None]
    return node


def _leaf(target: Any) -> dict[str, Any]:
    if get_origin(target) is Literal:
        return {"type": "string", "enum": list(get_args(target))}
    if get_origin(target) in (tuple, list):
        return {"type": "array", "items": {"type": "string"}}
    kinds = {int: "integer", float: "number", bool: "boolean", str: "string"}
    return {"type": kinds.get(target, "object")}
