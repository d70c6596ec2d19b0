"""EK318: fields a Gym built-in server's config model requires, checked before spin-up.

Gym's config parse accepts any fields on a server block; the block meets its implementation's
pydantic model only when the server starts (``BaseServer.load_config_from_global_config``
validates it with ``model_fields["config"]`` of the class the entrypoint runs). A policy model
without ``uses_reasoning_parser`` therefore passes the parse and kills spin-up. The models of
Gym's built-in servers are read off the real classes by ``scripts/gym_server_models.py``; a
server the package ships itself, or one whose model could not be read, is not checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envkit.model.gym_data import gym_data
from envkit.model.package import INSTALL_MARKERS, safe_relpath
from envkit.validators.gym.model import Opaque, own_servers, view_of
from envkit.validators.gym.rules import EK318
from envkit.validators.gym.shapes import fmt_keypath

if TYPE_CHECKING:
    from collections.abc import Iterator

    from envkit.model.diagnostics import Diagnostic
    from envkit.model.gym_data import ServerModel
    from envkit.model.package import Package
    from envkit.validators._base import Inputs
    from envkit.validators.gym.model import GymView, Instance

__all__ = ["check_builtin_fields", "lax_accepts"]

_BOOL_TEXT = frozenset({"1", "on", "t", "true", "y", "yes", "0", "off", "f", "false", "n", "no"})
"""The strings pydantic's lax mode reads as a bool (case-insensitive)."""

_OMEGACONF_FLOAT = re.compile(
    r"""^(?:[-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+)
    |\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
"""OmegaConf's YAML loader reads these plain scalars as floats where PyYAML keeps a string
(``1e3``); envkit cannot tell a plain one from a quoted one, so their type is not judged."""


def _float_text(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?\s*")
"""pydantic parses ``"1_000"`` and ``"1.0"`` as ints, not ``"1.5"`` or ``"1e3"``."""


def _accepts_one(value: Any, kind: str, *, coerce: bool) -> bool:
    """pydantic v2 lax mode for one simple type, on a value YAML can produce."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "none":
        return value is None
    if kind == "bool":
        if isinstance(value, str):
            return value.lower() in _BOOL_TEXT
        return isinstance(value, bool) or (number and value in (0, 1))
    if kind == "int":
        if isinstance(value, float):
            return math.isfinite(value) and value.is_integer()
        return isinstance(value, int) or bool(isinstance(value, str) and _INT_TEXT.fullmatch(value))
    if kind == "float":
        text = isinstance(value, str) and _float_text(value) is not None
        return isinstance(value, int | float) or text
    if kind == "str":
        return isinstance(value, str) or (coerce and number)
    return isinstance(value, list if kind == "list" else dict)


def lax_accepts(value: Any, kinds: frozenset[str], *, coerce_numbers_to_str: bool = False) -> bool:
    """True unless pydantic's lax mode surely rejects ``value`` for a field of ``kinds``.

    >>> lax_accepts("true", frozenset({"bool"}))
    True
    >>> lax_accepts("maybe", frozenset({"bool"}))
    False
    >>> lax_accepts(3, frozenset({"str"}))
    False
    """
    return any(_accepts_one(value, kind, coerce=coerce_numbers_to_str) for kind in kinds)


_WHOLE_KEY = re.compile(r"\$\{([A-Za-z_][\w-]*(?:\.[\w-]+)*)\}")
"""A value that is one plain ``${key.path}`` interpolation: OmegaConf gives it the target's type."""


def _resolve(value: Any, merged: Mapping[str, Any]) -> Any:
    """``value`` with a whole-value ``${key}`` chain followed through the package's configs.

    The three keys the job injects and anything Gym fills in at runtime are not in ``merged``,
    so they stay interpolations (not judged); so do resolvers (``${oc.env:...}``), which depend
    on where the server runs.
    """
    for _ in range(8):  # OmegaConf rejects cycles; a long chain is not worth judging
        match = _WHOLE_KEY.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            return value
        node: Any = merged
        for segment in match.group(1).split("."):
            if not isinstance(node, dict) or isinstance(node, Opaque) or segment not in node:
                return value
            node = node[segment]
        value = node
    return value


def _judgeable(value: Any) -> bool:
    """A value whose type at server start is the one YAML gave it here."""
    if isinstance(value, str):
        return "${" not in value and value != "???" and not _OMEGACONF_FLOAT.match(value)
    return value is None or isinstance(value, bool | int | float | list | dict)


def _runs_builtin(pkg: Package, server_type: str, impl: str) -> bool:
    """Gym's ``_resolve_server_dir``: the package's directory if it has an install marker."""
    if not gym_data().is_builtin(server_type, impl):
        return False
    return not any(f"{server_type}/{impl}/{m}" in pkg.entries for m in INSTALL_MARKERS)


def _fully_known(view: GymView, instance: Instance) -> bool:
    """False when part of the block comes from a Gym config envkit knows only in summary."""
    names = {instance.name, *([instance.inherits] if instance.inherits else [])}
    return not any(
        isinstance(view.docs[path].data, dict) and names & set(view.docs[path].data)
        for path in view.builtin
    )


def _model_for(pkg: Package, view: GymView, instance: Instance) -> ServerModel | None:
    server_type, impl = instance.shape.server_type or "", instance.shape.impl or ""
    entrypoint = safe_relpath(str(instance.shape.fields.get("entrypoint", "")))
    if not (entrypoint and _runs_builtin(pkg, server_type, impl) and _fully_known(view, instance)):
        return None
    return gym_data().server_model(server_type, impl, entrypoint)


_PYDANTIC = {
    "bool": "a valid boolean", "int": "a valid integer", "float": "a valid number",
    "str": "a valid string", "list": "a valid list", "dict": "a valid dictionary", "none": "None",
}
"""The wording of pydantic's error for each simple type ("Input should be a valid boolean")."""


def _expected(kinds: frozenset[str]) -> str:
    return " or ".join(_PYDANTIC[k] for k in sorted(kinds))


def _findings(instance: Instance, model: ServerModel,
              merged: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], str, str]]:
    """``(keypath below the block, message, hint)`` for each field pydantic will reject."""
    fields, impl = instance.shape.fields, instance.shape.impl
    gym = f"Gym's built-in `{impl}` validates this block with `{model.model}` when it starts"
    for key in model.required:
        if key not in fields:
            kinds = model.fields.get(key)
            shown = f" ({_expected(kinds)})" if kinds else ""
            hint = f"Add `{key}`{shown} to the `{impl}` block."
            yield (key,), f"is missing: {gym} (ValidationError: Field required)", hint
    for key, raw in fields.items():
        kinds = model.fields.get(str(key))
        value = _resolve(raw, merged)
        if kinds is None or model.strict or not _judgeable(value):
            continue
        if not lax_accepts(value, kinds, coerce_numbers_to_str=model.coerce_numbers_to_str):
            error = f"ValidationError: Input should be {_expected(kinds)}"
            hint = f"Give `{key}` {_expected(kinds)}."
            shown = f"{raw!r}, which resolves to {value!r}" if raw is not value else repr(value)
            yield (str(key),), f"is {shown}: {gym} ({error})", hint


def check_builtin_fields(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK318: a block run by a Gym built-in must satisfy that built-in's config model."""
    view, pkg = view_of(inputs.package), inputs.package
    if view is None or pkg is None:
        return
    for instance in own_servers(view):
        model = _model_for(pkg, view, instance)
        if model is None:
            continue
        for keypath, problem, hint in _findings(instance, model, view.merged):
            full = instance.field_path(*keypath)
            path, line = instance.locate(*full)
            message = f"`{fmt_keypath((instance.name, *full))}` {problem}"
            yield EK318.at(path, message, line=line, hint=hint)
