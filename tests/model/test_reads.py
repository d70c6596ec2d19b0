"""``read_bounded``/``read_fd_bounded``: a file whole, or one byte past its bound, in pieces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envkit.model._reads import read_bounded, read_fd_bounded


@pytest.mark.parametrize(("size", "limit", "read"), [
    (0, None, 0), (10, None, 10), (200_000, None, 200_000),  # several pieces
    (10, 10, 10), (11, 10, 11), (200_000, 100_000, 100_001), (200_000, 0, 1),
])
def test_a_file_is_read_whole_or_one_byte_past_its_bound(tmp_path: Path, size: int,
                                                         limit: int | None, read: int) -> None:
    data = bytes(i % 251 for i in range(size))
    (tmp_path / "f").write_bytes(data)
    assert read_bounded(tmp_path / "f", limit) == data[:read]
    assert read_bounded(str(tmp_path / "f"), limit) == data[:read]
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert read_fd_bounded(fd, limit) == data[:read]
    finally:
        os.close(fd)


def test_what_cannot_be_read_raises_and_leaves_no_descriptor(tmp_path: Path) -> None:
    before = len(list(Path("/proc/self/fd").iterdir()))
    with pytest.raises(IsADirectoryError):
        read_bounded(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing", 5)
    assert len(list(Path("/proc/self/fd").iterdir())) == before
