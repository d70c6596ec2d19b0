"""``sha256_file``: the same digest as ``hashlib`` at every size around its read sizes, with
and without ``os.readv``; a file past its first read is read on into one buffer, not a new
``bytes`` per piece (fresh memory each time: a page fault per 4 KiB)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from envkit.model import tree
from envkit.model.tree import sha256_file

HEAD, PIECE = 1 << 16, 1 << 20
SIZES = (0, 1, HEAD - 1, HEAD, HEAD + 1, PIECE, HEAD + PIECE, HEAD + PIECE + 1, 3 * PIECE + 7)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("readv", [True, False], ids=["readv", "read"])
def test_the_digest_is_hashlib_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int,
                                 readv: bool) -> None:
    data = os.urandom(size)
    path = tmp_path / "f"
    path.write_bytes(data)
    if not readv:
        monkeypatch.delattr(os, "readv", raising=False)
    assert sha256_file(path) == sha256_file(str(path)) == hashlib.sha256(data).hexdigest()


def test_a_big_file_is_read_once_then_into_one_buffer(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big"
    path.write_bytes(os.urandom(4 * PIECE + 3))
    reads, buffers = [], set()
    real_read, real_readv = os.read, os.readv

    def read(fd: int, n: int) -> bytes:
        reads.append(n)
        return real_read(fd, n)

    def readv(fd: int, into: tuple[bytearray, ...]) -> int:
        buffers.update(id(b) for b in into)
        return real_readv(fd, into)

    monkeypatch.setattr(tree.os, "read", read)
    monkeypatch.setattr(tree.os, "readv", readv)
    sha256_file(path)
    assert reads == [HEAD]
    assert len(buffers) == 1
