"""Directory outputs that appear whole or not at all.

A package is written into a sibling temp dir (``.envkit-tmp-<name>-<pid>-<random>``) and
swapped into place with one rename, as build's ``_write_report`` does for a single file
(``mkstemp`` next to the target, then ``os.replace``). Linux ``renameat2(RENAME_EXCHANGE)``
swaps a non-empty directory atomically; elsewhere two renames leave a short window without
the output, never a half-written one. Temp dirs of killed processes are found by pid.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
from pathlib import Path

from envkit.errors import FailedError

__all__ = ["TMP_PREFIX", "EscapingPathError", "make_temp_dir", "stale_temp_dirs",
           "swap_into_place", "write_files", "write_text"]

TMP_PREFIX = ".envkit-tmp-"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class EscapingPathError(FailedError, ValueError):
    """A planned file would land outside the output directory."""


def make_temp_dir(out: Path) -> Path:
    """A fresh temp dir next to ``out`` (same filesystem, so the final rename is atomic)."""
    prefix = f"{TMP_PREFIX}{out.name}-{os.getpid()}-"
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=out.parent))
    tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it 0700; the output follows the umask
    return tmp


def _umask() -> int:
    """The process umask (reading it means setting it; set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
    if not out.exists():
        tmp.rename(out)
        return
    if not _exchange(tmp, out):
        old = out.with_name(f"{TMP_PREFIX}{out.name}-{os.getpid()}-old")
        out.rename(old)
        tmp.rename(out)
        old.rename(tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Linux ``renameat2(RENAME_EXCHANGE)``: both names swap atomically. False if unsupported."""
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    return func(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0


def write_text(path: Path, text: str, *, mode: int = 0o644) -> Path:
    """One file, whole or not at all: ``mkstemp`` beside it, then ``os.replace`` (a reader
    never sees half a file; a crash leaves the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
