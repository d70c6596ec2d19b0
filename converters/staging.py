"""Outputs appear only on success: everything is written into temp dirs beside the final
paths (same filesystem) and renamed into place at the very end; any failure before that
removes the temp dirs, so a refused conversion leaves no package and no dataset behind."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from envkit.errors import FailedError
from envkit.supply.atomic import make_temp_dir, stale_temp_dirs

if TYPE_CHECKING:
    from contextlib import ExitStack
    from pathlib import Path

__all__ = ["InstallError", "install", "remove_stale", "stage"]


class InstallError(FailedError, OSError):
    """The staged outputs could not be renamed into place (nothing was left half-moved)."""


def remove_stale(*finals: Path) -> None:
    """Temp dirs that killed conversions (or builds) left beside the outputs; done before
    staging, since ``envkit.supply.atomic`` counts this process's own temp dirs as stale."""
    for parent in {f.resolve().parent for f in finals}:
        if parent.is_dir():
            for stale in stale_temp_dirs(parent):
                shutil.rmtree(stale, ignore_errors=True)


def stage(stack: ExitStack, final: Path) -> Path:
    """A temp dir beside ``final`` (same filesystem, so the last step is a rename), removed
    when ``stack`` closes unless it was renamed away. Parents created here are removed too
    when they stay empty."""
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


def install(pairs: list[tuple[Path, Path]], *, force: bool) -> None:
    """Rename each staged dir onto its final path; if one rename fails, undo the others.

    :raises InstallError: a rename failed (the previous outputs, with --force, are restored).
    """
    backups: list[tuple[Path, Path]] = []
    done: list[Path] = []
    try:
        for staged, final in pairs:
            if final.exists() and force:
                backup = final.with_name(f".{final.name}.envkit-old")
                final.rename(backup)
                backups.append((backup, final))
            staged.rename(final)
            done.append(final)
    except OSError as exc:
        for final in done:
            shutil.rmtree(final, ignore_errors=True)
        for backup, final in backups:
            backup.rename(final)
        raise InstallError(f"could not move the output into place: {exc}") from None
    for backup, _ in backups:
        shutil.rmtree(backup, ignore_errors=True)
