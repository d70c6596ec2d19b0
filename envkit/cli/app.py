"""The ``envkit`` command's click layer: ``envkit.cli.main`` comes here with every invocation.
Commands parse, call one core function, and
return a typed result; the group renders it (``_emit``) and decides the exit status.

Exit codes are decided here and nowhere else (``classify``): 0 success/valid, 1 invalid/failed,
2 usage, missing extra or internal error, 130 interrupted; a failure's own class says its kind
(``envkit.errors``). Results go to stdout; logs go to stderr through the one logging set-up
(``configure_logging``).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from pathlib import Path
from typing import Any

import click

from envkit import __version__
from envkit.cli._common import FORMAT_KEY, REPORT_FILE_KEY, run_state
from envkit.cli._examples import ROOT_EXAMPLE, add_examples, epilog
from envkit.errors import INTERNAL, KIND_EXITS, EnvkitError

__all__ = ["COMMANDS", "classify", "cli", "main", "report_failure"]

COMMANDS = {
    "init": ("envkit.cli.init", "init_command"),
    "validate": ("envkit.cli.validate", "validate_command"),
    "build": ("envkit.cli.build", "build_command"),
    "convert": ("envkit.cli.convert", "convert_group"),
    "rollout": ("envkit.cli.rollout", "rollout_command"),
    "smoke": ("envkit.cli.smoke", "smoke_command"),
    "probe": ("envkit.cli.probe", "probe_command"),
    "prefetch": ("envkit.cli.prefetch", "prefetch_command"),
    "rescore": ("envkit.cli.rescore", "rescore_command"),
    "profile": ("envkit.cli.profile", "profile_command"),
    "train": ("envkit.cli.train", "train_command"),
    "submit": ("envkit.cli.submit", "submit_command"),
    "job": ("envkit.cli.job", "job_group"),
    "schema": ("envkit.cli.validate", "schema_command"),
    "rule": ("envkit.cli.validate", "rule_command"),
}
"""Command name -> (module, attribute). Imported on first use: `envkit validate` in a
pre-commit hook should not pay for the builder's, the trainer's or torch's imports."""


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), attr)
        return add_examples(command, cmd_name)

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, and an unknown command's error names the closest ones
        (``envkit validat`` -> ``validate``), as for an unknown option."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            import difflib

            close = difflib.get_close_matches(name, list(COMMANDS), n=3, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {name!r}. Did you mean "
                         f"{' or '.join(repr(c) for c in close)}?")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> int:
        """Run the command, then render its result or its error: the one exit path."""
        state = run_state(ctx)
        argv = [*getattr(ctx, "_protected_args", ()), *ctx.args]  # the command's, for errors
        try:
            with _venv_progress(argv[0] if argv else ""):
                result = super().invoke(ctx)
        except click.exceptions.Exit:
            raise
        except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
            return _interrupted()
        except Exception as exc:
            return report_failure(exc, argv, _requested_format(argv, state), ctx)
        target = state.get(REPORT_FILE_KEY)
        return _emit(result, str(state.get(FORMAT_KEY, "human")),
                    None if target is None else str(target))


def _emit(result: object, fmt: str, report_file: str | None) -> int:
    """Render ``result`` in ``fmt`` on stdout or into ``report_file``; ``None`` or an int is
    the status itself."""
    if result is None or isinstance(result, int):
        return result or 0
    from envkit.output import render

    if report_file is None:
        return render.render(result, fmt)
    with Path(report_file).open("w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh):
        return render.render(result, fmt)


def _interrupted() -> int:
    """Ctrl-C (click's ``Abort`` too): say so on stderr; 130 = 128 + SIGINT, as shells report it."""
    sys.stderr.write("Interrupted.\n")
    sys.stderr.flush()
    return 130


def report_failure(exc: Exception, argv: list[str], fmt: str,
                   ctx: click.Context | None = None) -> int:
    """Show the error that ended the command ``argv`` (click's own as click shows it, a usage
    error with the command's usage) and return its exit status. Without a context (a caller
    outside click), one is made for the usage line."""
    from envkit.output import failure

    code, kind = classify(exc)
    shown = isinstance(exc, click.ClickException) or kind == "usage"
    if isinstance(exc, click.ClickException):
        exc.show()
    elif kind == "usage":
        root = ctx if ctx is not None else click.Context(cli, info_name="envkit", obj={})
        _usage_error(root, argv, str(exc)).show()
    failure.render_error(exc, kind, fmt, shown=shown)
    return code


def _usage_error(ctx: click.Context, argv: list[str], message: str) -> click.UsageError:
    """A usage error the library raised, shown as click shows its own (with the usage)."""
    group = ctx.command
    command = group.get_command(ctx, argv[0]) if argv and isinstance(group, click.Group) else None
    sub = click.Context(command, info_name=argv[0], parent=ctx) if command else ctx
    return click.UsageError(message, ctx=sub)


_GYM_COMMANDS = frozenset({"smoke", "train", "rollout", "probe", "prefetch", "rescore",
                           "profile"})
"""The commands that bring Gym servers up or build their venvs, so may build for minutes."""


def _venv_progress(command: str) -> contextlib.AbstractContextManager[object]:
    """Venv set-up progress on stderr for every Gym bring-up of ``command`` (one observer for
    all of them); imported only there: other commands skip the runtime's imports."""
    if command not in _GYM_COMMANDS:
        return contextlib.nullcontext()
    from envkit.gym import observing
    from envkit.output.venvs import VenvProgress

    return observing(VenvProgress())


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=epilog(ROOT_EXAMPLE))
@click.version_option(__version__, prog_name="envkit")
def cli() -> None:
    """Build, validate and convert NeMo Gym environment packages; train on them with GRPO."""


def classify(exc: BaseException) -> tuple[int, str]:
    """(exit status, kind) for an exception that ended a command.

    An ``EnvkitError`` says both itself (its class's ``exit_code`` and ``kind``); click's own
    errors and an input path that does not exist are usage errors; anything else is a bug.
    """
    if isinstance(exc, EnvkitError):
        return type(exc).exit_code, type(exc).kind
    if isinstance(exc, (click.ClickException, FileNotFoundError, NotADirectoryError)):
        return KIND_EXITS["usage"], "usage"
    return KIND_EXITS[INTERNAL], INTERNAL


def _requested_format(argv: list[str], state: dict[str, Any]) -> str:
    """The output format, also when parsing failed before the option was read."""
    if FORMAT_KEY in state:
        return str(state[FORMAT_KEY])
    for i, arg in enumerate(argv):
        for flag in ("--output-format", "--format"):
            if arg == flag and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
    return "human"


def main(args: list[str]) -> int:
    """Run ``envkit ARGS`` through click (logging is set up by ``envkit.cli.main``); map what
    is left to a code."""
    try:
        rc = cli.main(args=args, prog_name="envkit", standalone_mode=False, obj={})
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:  # before any command ran: `envkit nosuchcommand`
        exc.show()
        return 2
    except (click.exceptions.Abort, KeyboardInterrupt):
        return _interrupted()
    return rc if isinstance(rc, int) else 0
