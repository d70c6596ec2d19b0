"""A new directory of files, whole or not at all, never over anything that exists.

The files are written into a sibling temp dir, then appear in one rename. An existing empty
directory keeps its inode (it may be the shell's working directory, ``envkit init .``), so
there each top-level entry is moved in with ``renameat2(RENAME_NOREPLACE)``; a clash undoes
the moves made so far.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from envkit.errors import FailedError
from envkit.supply.atomic import make_temp_dir, write_files

__all__ = ["InitTargetError", "write_new_dir"]

_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


class InitTargetError(FailedError):
    """The target is a file or a non-empty directory: nothing was written."""


def write_new_dir(out: Path, files: Mapping[str, bytes]) -> None:
    """Create ``out`` holding ``files`` (relative path -> bytes).

    :raises InitTargetError: ``out`` is a file, a non-empty directory, or gained entries
        while the files were being written; in every case nothing of ``files`` is left.
    """
    out = out.absolute()
    _refuse_existing(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(out)
    try:
        write_files(tmp, dict(files))
        if out.is_dir():
            _move_entries(tmp, out)
        else:
            _rename_new(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _refuse_existing(out: Path) -> None:
    if out.is_dir() and not any(out.iterdir()):
        return
    if out.exists() or out.is_symlink():
        what = "a directory that is not empty" if out.is_dir() else "not a directory"
        msg = f"{out} is {what}: envkit init writes only into a new or empty directory"
        raise InitTargetError(msg, hint="name a new directory (envkit init my-env)")


def _rename_new(tmp: Path, out: Path) -> None:
    try:
        tmp.rename(out)  # onto a path that appeared meanwhile: only if it is an empty dir
    except OSError as exc:
        msg = f"{out} appeared while the project was written ({exc.strerror}); nothing written"
        raise InitTargetError(msg) from None


def _move_entries(tmp: Path, out: Path) -> None:
    moved: list[tuple[Path, Path]] = []
    try:
        for entry in sorted(tmp.iterdir()):
            dest = out / entry.name
            _rename_noreplace(entry, dest)
            moved.append((dest, entry))
    except OSError as exc:
        for dest, entry in reversed(moved):
            dest.rename(entry)
        msg = f"{out} gained {exc.filename!s} while the project was written; nothing written"
        raise InitTargetError(msg) from None


def _rename_noreplace(src: Path, dest: Path) -> None:
    """``rename`` that fails with ``EEXIST`` instead of replacing ``dest``."""
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        func = None
    if func is not None:
        if func(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dest),
                _RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(code, os.strerror(code), str(dest))
    if dest.exists() or dest.is_symlink():  # no renameat2: check, then rename
        raise OSError(errno.EEXIST, os.strerror(errno.EEXIST), str(dest))
    src.rename(dest)
