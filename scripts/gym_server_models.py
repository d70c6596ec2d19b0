"""What each built-in Gym server's config model requires: part of ``scripts/gen_gym_data.py``.

Gym validates a server's config block only when that server starts:
``BaseServer.load_config_from_global_config`` takes ``cls.model_fields["config"].annotation`` of
the class the entrypoint runs (``<ServerClass>.run_webserver()``) and calls ``model_validate``
on the block. A block that lacks a required field therefore passes Gym's config parse and
fails at spin-up. This module imports every built-in entrypoint in the Gym venv (never at
validate time), finds that class the way the entrypoint names it, and records the model's
required fields and the simple types of its fields, as pydantic itself reports them.

Run only inside a venv with nemo-gym installed. Entrypoints that need packages the plain Gym
venv lacks cannot be imported; they are recorded under ``unknown`` with the reason, and envkit
does not check them.
"""

from __future__ import annotations

import ast
import contextlib
import io
import signal
import sys
import types
import typing
from pathlib import Path
from typing import Any

__all__ = ["server_models"]

_SIMPLE = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict",
           type(None): "none"}
"""Annotation origins envkit can check a YAML value against, by pydantic's lax rules."""

_IMPORT_TIMEOUT_S = 60


def _runner_class(source: str) -> str | None:
    """The class an entrypoint starts: ``X`` of its ``X.run_webserver()`` calls (one name only)."""
    names = {
        node.func.value.id
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run_webserver"
        and isinstance(node.func.value, ast.Name)
    }
    return names.pop() if len(names) == 1 else None


def _simple_types(annotation: Any) -> list[str] | None:
    """The simple types a field accepts (``Optional[Union[str, List[str]]]`` -> none/str/list),
    or None when any part is something else (a model, a Literal, an enum, Any)."""
    if annotation in _SIMPLE:
        return [_SIMPLE[annotation]]
    origin = typing.get_origin(annotation)
    if origin in _SIMPLE:
        return [_SIMPLE[origin]]
    if origin is typing.Union or origin is types.UnionType:
        parts = [_simple_types(arg) for arg in typing.get_args(annotation)]
        if any(p is None for p in parts):
            return None
        return sorted({t for p in parts if p for t in p})
    return None


def _before_validated(model: type) -> tuple[bool, set[str]]:
    """Whether a model-level validator sees the raw input (``before``/``wrap``: it may fill or
    rewrite fields), and the fields whose own validator does."""
    decorators = model.__pydantic_decorators__  # type: ignore[attr-defined]
    raw_modes = ("before", "wrap", "plain")
    model_level = any(d.info.mode in ("before", "wrap")
                      for d in decorators.model_validators.values())
    fields = {
        name
        for d in decorators.field_validators.values() if d.info.mode in raw_modes
        for name in d.info.fields
    }
    return model_level, fields


def _missing_fields(model: type, base_fields: set[str]) -> list[str] | None:
    """Fields pydantic reports ``missing`` for a block that sets only Gym's own fields.

    Asking pydantic (not ``is_required()``) keeps before-validators that fill a field in the
    answer. None when validation fails for another reason first (a validator raised).
    """
    import pydantic

    sample = {"host": "127.0.0.1", "port": 1, "entrypoint": "app.py", "name": "probe"}
    try:
        model.model_validate({k: v for k, v in sample.items() if k in base_fields})  # type: ignore[attr-defined]
    except pydantic.ValidationError as exc:
        errors = exc.errors()
        if any(e["type"] != "missing" or len(e["loc"]) != 1 for e in errors):
            return None
        return sorted(str(e["loc"][0]) for e in errors if e["loc"][0] not in base_fields)
    return []


def _describe(model: type, base_fields: set[str]) -> dict[str, Any]:
    """The record envkit's EK318 reads for one config model."""
    model_level, raw_fields = _before_validated(model)
    missing = _missing_fields(model, base_fields)
    fields: dict[str, list[str] | None] = {}
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        if name in base_fields:
            continue
        key = info.alias or name
        checkable = not model_level and name not in raw_fields
        fields[key] = _simple_types(info.annotation) if checkable else None
    coerce = bool(model.model_config.get("coerce_numbers_to_str"))  # type: ignore[attr-defined]
    record: dict[str, Any] = {
        "model": model.__qualname__,
        "required": missing if missing is not None else [],
        "fields": fields,
    }
    if missing is None:
        record["required_unknown"] = "validating an empty block fails before the field check"
    if coerce:
        record["coerce_numbers_to_str"] = True
    if model.model_config.get("strict"):  # type: ignore[attr-defined]
        record["strict"] = True
    return record


class _Timeout(Exception):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout


def _load(entrypoint: Path, class_name: str) -> type:
    """Run ``entrypoint`` as Gym's ``python <entrypoint>`` would, minus ``__main__``.

    Gym runs it with cwd and ``sys.path[0]`` = the server directory; sibling modules it imports
    are dropped afterwards so the next server's ``utils`` is its own.
    """
    import runpy

    directory = str(entrypoint.parent)
    before = set(sys.modules)
    sys.path.insert(0, directory)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(_IMPORT_TIMEOUT_S)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            namespace = runpy.run_path(str(entrypoint), run_name="envkit_probe")
    finally:
        signal.alarm(0)
        sys.path.remove(directory)
        for name in set(sys.modules) - before:
            module = sys.modules.get(name)
            if str(getattr(module, "__file__", "") or "").startswith(directory):
                del sys.modules[name]
    return namespace[class_name]


def _entrypoints(server_dir: Path) -> dict[str, str]:
    """``{file: class}`` for each module in the server dir that starts a server."""
    found = {}
    for path in sorted(server_dir.glob("*.py")):
        with contextlib.suppress(SyntaxError, UnicodeDecodeError, OSError):
            name = _runner_class(path.read_text("utf-8"))
            if name:
                found[path.name] = name
    return found


def _model_of(server_dir: Path, entrypoint: str, class_name: str,
              base_fields: set[str]) -> dict[str, Any]:
    try:
        server = _load(server_dir / entrypoint, class_name)
        model = server.model_fields["config"].annotation
        return _describe(model, base_fields)
    except _Timeout:
        return {"unknown": f"import took over {_IMPORT_TIMEOUT_S} s"}
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"unknown": f"{type(exc).__name__}: {str(exc)[:200]}"}


def server_models(site: Path, server_dirs: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{"<type>/<impl>": {entrypoint: record}}`` for every built-in server directory.

    A record is ``{"model", "required", "fields": {key: simple types or null}}`` or
    ``{"unknown": reason}``. Fields every server has (``BaseRunServerInstanceConfig``: host,
    port, entrypoint, name, domain ...) are left out: Gym fills or checks them itself.
    """
    from nemo_gym.config_types import BaseRunServerInstanceConfig

    base_fields = set(BaseRunServerInstanceConfig.model_fields)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for rel in server_dirs:
        entrypoints = _entrypoints(site / rel)
        if entrypoints:
            out[rel] = {
                file: _model_of(site / rel, file, cls, base_fields)
                for file, cls in entrypoints.items()
            }
    return out
