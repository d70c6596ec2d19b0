"""The ``envkit`` command: a thin click layer. Commands parse, call one core function, render.

Exit codes are decided in one place (``main``): 0 success/valid, 1 invalid/failed,
2 usage or internal error. Results go to stdout; logs and progress to stderr.
"""

from __future__ import annotations

import sys

import click

from envkit import __version__
from envkit.cli.build import build_command
from envkit.cli.convert import convert_group
from envkit.cli.rollout import rollout_command
from envkit.cli.train import train_command
from envkit.cli.validate import rule_command, schema_command, validate_command

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envkit")
def cli() -> None:
    """Build, validate and convert NeMo Gym environment packages; train on them with GRPO."""


cli.add_command(validate_command)
cli.add_command(schema_command)
cli.add_command(rule_command)
cli.add_command(build_command)
cli.add_command(convert_group)
cli.add_command(rollout_command)
cli.add_command(train_command)


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
