"""Render ``envkit init``'s result: the files written and what to run next."""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.init.project import InitResult
from envkit.output.render import renders
from envkit.output.stdout import dump, echo

if TYPE_CHECKING:
    from envkit.output.shapes import InitDict

__all__ = ["render_init"]


@renders(InitResult, "init")
def render_init(result: InitResult, fmt: str) -> int:
    """Print ``result`` in ``fmt`` on stdout; always 0 (a failed init raised)."""
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
