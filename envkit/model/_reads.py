"""Read a file a package carries, whole or up to a bound, in pieces."""

from __future__ import annotations

import os

__all__ = ["read_bounded", "read_fd_bounded"]

_PIECE = 64 * 1024


def read_bounded(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The file's bytes; with ``limit``, at most ``limit + 1`` of them (one more than allowed
    says the file is over it). Why not ``fh.read(limit + 1)``: it allocates ``limit`` first,
    so every small config would pay for its bound.

    :raises OSError: it cannot be opened or read (a directory: ``IsADirectoryError``).
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return read_fd_bounded(fd, limit)
    finally:
        os.close(fd)


def read_fd_bounded(fd: int, limit: int | None = None) -> bytes:
    """What :func:`read_bounded` reads, from a descriptor the caller opened (and closes): a
    reader that must see what the path is before reading (a FIFO, a device) opens it itself.

    :raises OSError: it cannot be read.
    """
    left = -1 if limit is None else limit + 1
    pieces = []
    while left and (piece := os.read(fd, _PIECE if left < 0 else min(_PIECE, left))):
        pieces.append(piece)
        if left > 0:
            left -= len(piece)
    return b"".join(pieces)
