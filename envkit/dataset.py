"""The prompt dataset model: ``training.jsonl`` (+ ``validation.jsonl``) rows, read once."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DATASET_FILES", "Dataset", "Row", "load_dataset"]

DATASET_FILES = ("training.jsonl", "validation.jsonl")


@dataclass(frozen=True)
class Row:
    """One line: ``data`` is the parsed JSON value, or None with ``error`` saying why."""

    file: str
    line: int
    data: Any = None
    error: str | None = None


@dataclass(frozen=True)
class Dataset:
    root: Path
    files: tuple[str, ...]
    """Which of ``DATASET_FILES`` exist."""
    rows: tuple[Row, ...]
    read_errors: tuple[tuple[str, str], ...] = ()


def load_dataset(root: str | Path) -> Dataset:
    """Read the dataset directory; a missing directory is a usage error (raises)."""
    root = Path(root)
    if not root.is_dir():
        msg = f"dataset {str(root)!r} is not a directory"
        raise NotADirectoryError(msg)
    files, rows, errors = [], [], []
    for name in DATASET_FILES:
        path = root / name
        if not path.exists():
            continue
        files.append(name)
        try:
            with path.open("rb") as fh:
                rows.extend(_parse_line(name, n, raw) for n, raw in enumerate(fh, start=1))
        except OSError as exc:
            errors.append((name, exc.strerror or str(exc)))
    return Dataset(root, tuple(files), tuple(r for r in rows if r is not None), tuple(errors))


def _parse_line(file: str, number: int, raw: bytes) -> Row | None:
    if not raw.strip():
        return None  # blank lines are skipped by every JSONL reader Gym uses
    try:
        return Row(file, number, json.loads(raw))
    except UnicodeDecodeError:
        return Row(file, number, error="not UTF-8")
    except json.JSONDecodeError as exc:
        return Row(file, number, error=f"invalid JSON: {exc.msg} (column {exc.colno})")
