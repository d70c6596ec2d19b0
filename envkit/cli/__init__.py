"""The ``envkit`` command: a thin click layer. Commands parse, call one core function, render.

Exit codes are decided in one place (``main``): 0 success/valid, 1 invalid/failed,
2 usage or internal error. Results go to stdout; logs and progress to stderr.
"""

from __future__ import annotations

import importlib
import sys

import click

from envkit import __version__

__all__ = ["COMMANDS", "cli", "main"]

COMMANDS = {
    "validate": ("envkit.cli.validate", "validate_command"),
    "build": ("envkit.cli.build", "build_command"),
    "convert": ("envkit.cli.convert", "convert_group"),
    "rollout": ("envkit.cli.rollout", "rollout_command"),
    "smoke": ("envkit.cli.smoke", "smoke_command"),
    "train": ("envkit.cli.train", "train_command"),
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
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envkit")
def cli() -> None:
    """Build, validate and convert NeMo Gym environment packages; train on them with GRPO."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and map every outcome to 0/1/2."""
    try:
        rc = cli.main(args=argv, prog_name="envkit", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return 2
    except (click.exceptions.Abort, KeyboardInterrupt):
        # click turns Ctrl-C into Abort; 130 = 128 + SIGINT, as shells report it.
        click.echo("Interrupted.", err=True)
        return 130
    except Exception as exc:
        click.echo(f"envkit: internal error: {type(exc).__name__}: {exc}", err=True)
        click.echo("Please report this with the command you ran.", err=True)
        return 2
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
