"""Directory outputs that appear whole or not at all.

A package is written into a sibling temp dir (``.envkit-tmp-<name>-<pid>-<random>``) and
swapped into place with one rename (``install``), as build's ``_write_report`` does for a
single file. Temp dirs of killed processes are found by pid.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

from envkit.errors import FailedError

__all__ = ["TMP_PREFIX", "EscapingPathError", "InstallError", "install", "make_temp_dir",
           "stale_temp_dirs", "swap_into_place", "write_files", "write_text"]

TMP_PREFIX = ".envkit-tmp-"
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class EscapingPathError(FailedError, ValueError):
    """A planned file would land outside the output directory."""


def make_temp_dir(out: Path) -> Path:
    """A fresh temp dir next to ``out`` (same filesystem, so the final rename is atomic)."""
    prefix = f"{TMP_PREFIX}{out.name}-{os.getpid()}-"
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=out.parent))
    mask = os.umask(0o022)  # reading the umask means setting it: set straight back
    os.umask(mask)
    tmp.chmod(0o777 & ~mask)  # mkdtemp makes it 0700; the output follows the umask
    return tmp


def write_files(root: Path, files: dict[str, Path | bytes]) -> None:
    """Write ``rel -> bytes | source file`` under ``root``, refusing paths that escape it
    (installer's ``_path_with_destdir`` check).

    :raises EscapingPathError: a relative path resolves outside ``root``.
    """
    base = root.resolve()
    for rel, content in sorted(files.items()):
        dest = (root / rel).resolve()
        if not dest.is_relative_to(base):
            msg = f"refusing to write {rel!r}: it escapes the output directory"
            raise EscapingPathError(msg)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            dest.write_bytes(content)
        else:
            shutil.copyfile(content, dest)


def stale_temp_dirs(parent: Path) -> list[Path]:
    """Temp dirs under ``parent`` whose creating process is gone."""
    stale = []
    for path in parent.glob(f"{TMP_PREFIX}*"):
        pid = path.name.removeprefix(TMP_PREFIX).rsplit("-", 2)[-2:][0]
        if path.is_dir() and not (pid.isdigit() and _alive(int(pid))):
            stale.append(path)
    return stale


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # an earlier, interrupted build of this very process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def swap_into_place(tmp: Path, out: Path) -> None:
    """Make ``tmp`` appear at ``out`` in one step, then delete the previous ``out``."""
    install([(tmp, out)], replace=True)


class InstallError(FailedError, OSError):
    """Staged outputs could not all be moved into place; the ones moved were moved back."""


def install(pairs: Sequence[tuple[Path, Path]], *, replace: bool) -> None:
    """Move each staged dir onto its final path, all or none; then delete what they replaced.

    Each move is one rename: ``RENAME_EXCHANGE`` over an existing output (``replace``),
    ``RENAME_NOREPLACE`` onto a free name (so an output that appeared since the caller looked
    is never overwritten without ``replace``). Where the kernel lacks both, two plain renames
    leave a short window without the output, never a half-written one. If one pair fails, the
    pairs already moved are moved back, so every output is as it was before.

    :raises InstallError: an output exists and ``replace`` is false, or a rename failed.
    """
    undo: list[_Moved] = []
    for staged, final in pairs:
        try:
            undo.append(_move(staged, final, replace=replace))
        except OSError as exc:
            stuck = [str(m.final) for m in reversed(undo) if not m.revert()]
            why = exc.strerror or str(exc)
            msg = f"could not move the output into place at {str(final)!r}: {why}"
            if stuck:
                msg += f"; could not restore {', '.join(stuck)}"
            raise InstallError(msg) from None
    for moved in undo:
        moved.discard_old()


@dataclass(frozen=True, slots=True)
class _Moved:
    """One done move: ``old`` holds what ``final`` had before (None if it was free)."""

    staged: Path
    final: Path
    old: Path | None
    exchanged: bool

    def revert(self) -> bool:
        """Put ``final`` back as it was and the staged tree back at ``staged``; False if the
        filesystem refused (the caller names the output in its error)."""
        try:
            if self.exchanged:
                return _rename2(self.staged, self.final, _RENAME_EXCHANGE)
            self.final.rename(self.staged)
            if self.old is not None:
                self.old.rename(self.final)
        except OSError:
            return False
        return True

    def discard_old(self) -> None:
        if self.old is not None:
            shutil.rmtree(self.old, ignore_errors=True)


def _move(staged: Path, final: Path, *, replace: bool) -> _Moved:
    """:raises OSError: ``final`` exists and not ``replace`` (``EEXIST``), or a rename failed."""
    if final.exists() or final.is_symlink():
        if not replace:
            raise FileExistsError(errno.EEXIST, "it exists (pass --force to replace it)")
        if _rename2(staged, final, _RENAME_EXCHANGE):
            return _Moved(staged, final, old=staged, exchanged=True)
        old = make_temp_dir(final)  # empty: renaming a directory onto it replaces it
        final.rename(old)
        try:
            staged.rename(final)
        except OSError:
            old.rename(final)
            raise
        return _Moved(staged, final, old=old, exchanged=False)
    if not _rename2(staged, final, _RENAME_NOREPLACE):
        staged.rename(final)
    return _Moved(staged, final, old=None, exchanged=False)


def _rename2(a: Path, b: Path, flags: int) -> bool:
    """Linux ``renameat2``: with ``RENAME_EXCHANGE`` both names swap atomically, with
    ``RENAME_NOREPLACE`` ``a`` moves only if ``b`` is free. False where the call or the flag
    is unsupported (another OS, a filesystem without it).

    :raises OSError: the kernel refused the rename for another reason (``b`` exists, ...).
    """
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if func(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def write_text(path: Path, text: str) -> Path:
    """One file, whole or not at all: ``mkstemp`` beside it, then ``os.replace`` (a reader
    never sees half a file; a crash leaves the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
