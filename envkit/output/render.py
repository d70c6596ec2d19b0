"""Every command's result, printed in the output format the user chose.

``render(result, fmt)`` is the only place a command's result reaches stdout; it returns the
exit status the result stands for (0 valid/succeeded, 1 invalid/failed). It dispatches on the
result's type (``functools.singledispatch``), and every JSON it prints is a versioned
``TypedDict`` with a JSON Schema under ``envkit schema`` (``schema_for`` names it).

Why some renderers register lazily: a result type's module is imported by the command that
made it; ``envkit validate`` in a pre-commit hook must not import the builder, the smoke
runtime or the platform client just so that their renderers exist. ``_LAZY`` holds, for each
such module, the function that registers its types, run the first time a result from that
module is rendered (the pattern of dask's ``Dispatch.register_lazy``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, TypeVar

from envkit.output.runs import render_run
from envkit.output.stdout import dump, echo
from envkit.validate.report import ValidationRun

if TYPE_CHECKING:
    from collections.abc import Callable

    from envkit.output.shapes import (
        InitDict,
    )

__all__ = ["registered_types", "render", "renders", "schema_for"]

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
_LAZY: dict[str, Callable[[], None]] = {}


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
    for module in list(_LAZY):
        _LAZY.pop(module)()
    return [cls for cls in render.registry if cls is not object]


def _lazy(module: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def later(registrar: Callable[[], None]) -> Callable[[], None]:
        _LAZY[module] = registrar
        return registrar

    return later


def _register_lazily(cls: type) -> bool:
    """Run the registrars of ``cls``'s modules (its own and its bases'); True if any ran."""
    ran = False
    for klass in cls.__mro__:
        registrar = _LAZY.pop(klass.__module__, None)
        if registrar is not None:
            registrar()
            ran = True
    return ran


@renders(ValidationRun, "diagnostics")
def _validation(run: ValidationRun, fmt: str) -> int:
    return render_run(run, fmt)


@_lazy("envkit.builder.build")
def _register_build() -> None:
    from envkit.builder.build import BuildResult

    @renders(BuildResult, "diagnostics")
    def _build(result: BuildResult, fmt: str) -> int:
        return _validation(ValidationRun((result.report,)), fmt)


@_lazy("envkit.smoke.report")
def _register_smoke() -> None:
    from envkit.output.smoke import render_smoke
    from envkit.smoke.report import SmokeOutcome

    renders(SmokeOutcome, "smoke")(render_smoke)


@_lazy("envkit.probe.report")
def _register_probe() -> None:
    from envkit.output.probe import render_probe
    from envkit.probe.report import ProbeOutcome

    renders(ProbeOutcome, "probe")(render_probe)


@_lazy("envkit.gym.prefetch")
def _register_prefetch() -> None:
    from envkit.gym import PrefetchResult
    from envkit.output.prefetch import render_prefetch

    renders(PrefetchResult, "prefetch")(render_prefetch)


@_lazy("envkit.rescore.report")
def _register_rescore() -> None:
    from envkit.output.rescore import render_rescore
    from envkit.rescore import RescoreReport

    renders(RescoreReport, "rescore")(render_rescore)


@_lazy("envkit.profile.report")
def _register_profile() -> None:
    from envkit.output.profile import render_profile
    from envkit.profile.report import ProfileReport

    renders(ProfileReport, "profile")(render_profile)


@_lazy("envkit.platform.outcomes")
def _register_platform() -> None:
    from envkit.output import platform

    platform.register(renders)


@_lazy("envkit.output.results")
def _register_results() -> None:
    """The outcomes of convert, rollout, train, schema, rule and settings (``render_results``:
    ``envkit validate`` never builds one, so it never imports them)."""
    from envkit.output import render_results

    render_results.register(renders)


@_lazy("envkit.init.project")
def _register_init() -> None:
    from envkit.init.project import InitResult

    @renders(InitResult, "init")
    def _init(result: InitResult, fmt: str) -> int:
        """``envkit init``: the files written and what to run next."""
        if fmt == "json":
            shape: InitDict = {
                "version": "1.0", "directory": str(result.directory),
                "template": result.template, "name": result.name, "format": result.format,
                "arch": result.arch, "files": list(result.files),
                "next_steps": list(result.next_steps)}
            echo(dump(shape))
            return 0
        lines = [f"Created {result.directory} ({result.template} template, {result.format} "
                 f"for {result.arch}): {len(result.files)} files",
                 *(f"  {f}" for f in result.files), "", "Next:",
                 *(f"  {step}" for step in result.next_steps)]
        echo("\n".join(lines))
        return 0
