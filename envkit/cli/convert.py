"""``envkit convert``: turn other environment sources into packages."""

from __future__ import annotations

import click

from envkit.cli.build import package_command
from envkit.cli.convert_verifiers import verifiers_command

__all__ = ["convert_group"]


@click.group("convert")
def convert_group() -> None:
    """Convert environments into NeMo Gym environment packages."""


convert_group.add_command(verifiers_command)
convert_group.add_command(package_command)
