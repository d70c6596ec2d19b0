"""A ``ValidationRun`` in any output format: what ``validate`` prints, and what build, convert
and the others print for the report they carry."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from envkit.output.human import Console, render_github, render_human
from envkit.output.stdout import dump, echo

if TYPE_CHECKING:
    from envkit.validate.report import ValidationRun

__all__ = ["render_run"]


def render_run(run: ValidationRun, fmt: str) -> int:
    """Print ``run`` in ``fmt`` (json, github, sarif, human); return its exit status."""
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
