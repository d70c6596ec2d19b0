"""Every command's result, printed in the output format the user chose.

``render(result, fmt)`` is the only place a command's result reaches stdout; it returns the
exit status the result stands for (0 valid/succeeded, 1 invalid/failed). It dispatches on the
result's type (``functools.singledispatch``), and every JSON it prints is a versioned
``TypedDict`` with a JSON Schema under ``envkit schema`` (``schema_for`` names it).

Why most renderers register lazily: a result type's module is imported by the command that
made it; ``envkit validate`` in a pre-commit hook must not import the smoke runtime or the
platform client just so that their renderers exist. ``_LAZY`` names, for each such module, the
module of its renderers (which register themselves with ``renders``), imported the first time a
result from that module is rendered (the pattern of dask's ``Dispatch.register_lazy``).
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import TYPE_CHECKING, Any, TypeVar

from envkit.output.human import Console, render_github, render_human
from envkit.output.stdout import dump, echo
from envkit.validate.report import ValidationRun

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["registered_types", "render", "render_run", "renders", "schema_for"]

_Renderer = TypeVar("_Renderer", bound="Callable[[Any, str], int]")


@functools.singledispatch
def render(result: object, fmt: str) -> int:
    """Print ``result`` on stdout in ``fmt``; return the exit status it stands for.

    :raises TypeError: no renderer is registered for the result's type (a bug).
    """
    if _register_lazily(type(result)):
        return render(result, fmt)
    msg = f"no renderer for {type(result).__module__}.{type(result).__qualname__}"
    raise TypeError(msg)


_SCHEMAS: dict[type, str] = {}
_LAZY = {
    "envkit.smoke.report": "envkit.output.smoke",
    "envkit.probe.report": "envkit.output.probe",
    "envkit.gym.prefetch": "envkit.output.prefetch",
    "envkit.rescore.report": "envkit.output.rescore",
    "envkit.profile.report": "envkit.output.profile",
    "envkit.platform.outcomes": "envkit.output.platform",
    "envkit.output.results": "envkit.output.render_results",
    "envkit.init.project": "envkit.output.init",
}
"""A result type's module -> the module of its renderers."""


def renders(cls: type, schema: str | None) -> Callable[[_Renderer], _Renderer]:
    """Register the decorated function as ``render`` for ``cls``, whose JSON follows
    ``schema`` (``None``: it prints no JSON of its own)."""

    def register(func: _Renderer) -> _Renderer:
        render.register(cls, func)
        if schema is not None:
            _SCHEMAS[cls] = schema
        return func

    return register


def schema_for(cls: type) -> str | None:
    """The schema (``envkit schema NAME``) the JSON output of a ``cls`` result follows."""
    _register_lazily(cls)
    return next((_SCHEMAS[c] for c in cls.__mro__ if c in _SCHEMAS), None)


def registered_types() -> list[type]:
    """Every result type ``render`` knows, the lazily registered ones included (imports them:
    for tests and tools, not for a command)."""
    for module in set(_LAZY.values()):
        importlib.import_module(module)
    _LAZY.clear()
    return [cls for cls in render.registry if cls is not object]


def _register_lazily(cls: type) -> bool:
    """Import the renderers of ``cls``'s modules (its own and its bases'); True if any."""
    modules = [_LAZY.pop(k.__module__) for k in cls.__mro__ if k.__module__ in _LAZY]
    for module in modules:
        importlib.import_module(module)
    return bool(modules)


@renders(ValidationRun, "diagnostics")
def render_run(run: ValidationRun, fmt: str) -> int:
    """Print ``run`` in ``fmt`` (json, github, sarif, human); return its exit status: what
    ``validate`` prints, and what build, convert and the others print for the report they
    carry."""
    if fmt == "json":
        echo(dump(run.to_dict()))
    elif fmt == "github":
        echo(render_github(run))
    elif fmt == "sarif":
        from envkit.output.sarif import sarif_log

        echo(dump(sarif_log(run)))
    else:
        render_human(run, Console(sys.stdout))
    return run.exit_code
