"""The prompt dataset model: ``training.jsonl`` (+ ``validation.jsonl``), streamed row by row.

A GRPO dataset can hold a million rows, so they are not kept in memory: ``Dataset.iter_rows``
reads one line at a time, and a line over ``MAX_LINE_BYTES`` is an error row, not buffered.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["DATASET_FILES", "MAX_LINE_BYTES", "Dataset", "Row", "load_dataset"]

DATASET_FILES = ("training.jsonl", "validation.jsonl")

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A prompt row is KiBs; a longer line is reported, not parsed (bounded memory)."""

_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Row:
    """One line: ``data`` is the parsed JSON value, or None with ``error`` saying why."""

    file: str
    line: int
    data: Any = None
    error: str | None = None
    column: int | None = None
    """1-based column of the line's first non-blank byte (rows are never read a second time)."""


@dataclass(frozen=True, slots=True)
class Dataset:
    root: Path
    files: tuple[str, ...]
    """Which of ``DATASET_FILES`` exist as regular files."""
    read_errors: tuple[tuple[str, str], ...] = ()
    """``(file, reason)`` for a file that exists but cannot be opened (directory, permissions)."""

    def iter_rows(self, name: str) -> Iterator[Row]:
        """Stream the non-blank lines of ``name`` (Gym's and NeMo-RL's JSONL readers skip blank
        ones); a file that cannot be read yields nothing."""
        try:
            fh = (self.root / name).open("rb")
        except OSError:
            return
        with fh:
            for number, raw, too_long in _lines(fh):
                if too_long:
                    yield Row(name, number, error=f"line longer than {MAX_LINE_BYTES // 2**20} MiB")
                elif raw.strip():
                    data, error = _decode_line(raw)
                    yield Row(name, number, data, error, column=len(raw) - len(raw.lstrip()) + 1)


def load_dataset(root: str | Path) -> Dataset:
    """Look at the dataset directory (files are read later, streamed).

    :raises NotADirectoryError: ``root`` is not a directory (a usage error, not a defect).
    """
    root = Path(root)
    if not root.is_dir():
        msg = f"dataset {str(root)!r} is not a directory"
        raise NotADirectoryError(msg)
    files, errors = [], []
    for name in DATASET_FILES:
        path = root / name
        if not path.exists():
            if path.is_symlink():
                errors.append((name, "a dangling symlink"))
            continue
        if path.is_symlink() and not _inside(root, path):
            errors.append((name, "a symlink out of the directory (not followed)"))
            continue
        if not path.is_file():
            errors.append((name, "not a regular file"))
            continue
        try:
            path.open("rb").close()
        except OSError as exc:
            errors.append((name, exc.strerror or str(exc)))
            continue
        files.append(name)
    return Dataset(root, tuple(files), tuple(errors))


def _inside(root: Path, path: Path) -> bool:
    """Whether ``path`` resolves inside ``root``: the upload carries the directory, not what
    its links point at, so a link out of it validates a file the platform never sees."""
    return os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)


def _lines(fh: BinaryIO) -> Iterator[tuple[int, bytes, bool]]:
    """``(line number, bytes, too_long)``; an over-long line is skipped, never buffered whole."""
    number = 0
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield number, raw, False
            continue
        while raw and not raw.endswith(b"\n"):  # drain the rest of the long line
            raw = fh.readline(_CHUNK)
        yield number, b"", True


def _decode_line(raw: bytes) -> tuple[Any, str | None]:
    """``(value, None)`` or ``(None, why the line is not JSON)``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    except ValueError as exc:  # an integer past Python's 4,300-digit conversion limit
        return None, f"invalid JSON: {exc}"
