"""Outputs appear only on success: everything is written into temp dirs beside the final
paths and renamed into place at the very end; any failure before that removes the temp dirs."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from envkit.supply.atomic import make_temp_dir, stale_temp_dirs

if TYPE_CHECKING:
    from contextlib import ExitStack
    from pathlib import Path

__all__ = ["remove_stale", "stage"]


def remove_stale(*finals: Path) -> None:
    """Temp dirs that killed conversions (or builds) left beside the outputs; done before
    staging, since ``envkit.supply.atomic`` counts this process's own temp dirs as stale."""
    for parent in {f.resolve().parent for f in finals}:
        if parent.is_dir():
            for stale in stale_temp_dirs(parent):
                shutil.rmtree(stale, ignore_errors=True)


def stage(stack: ExitStack, final: Path) -> Path:
    """A temp dir beside ``final``, removed when ``stack`` closes unless it was renamed away
    (with the parents created here, when they stay empty)."""
    parent = final.resolve().parent
    created = [p for p in (parent, *parent.parents) if not p.exists()]
    parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(final.resolve())
    stack.callback(_rmdirs, created)
    stack.callback(shutil.rmtree, tmp, ignore_errors=True)
    return tmp


def _rmdirs(created: list[Path]) -> None:
    for path in created:  # deepest first
        try:
            path.rmdir()
        except OSError:
            return

