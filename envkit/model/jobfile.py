"""The GRPO job JSON model: the platform's ``rl`` job file, parsed once, with line numbers."""

from __future__ import annotations

import functools
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit.model._reads import read_fd_bounded
from envkit.model.jobspec import JobSettings, Problem, read_job
from envkit.model.yamlio import YamlDoc, parse_yaml

__all__ = ["MAX_JOB_BYTES", "JobDoc", "load_job", "parse_job"]


@dataclass(frozen=True)  # no slots: ``functools.cached_property`` needs ``__dict__``
class JobDoc:
    path: str
    data: Any = None
    error: str | None = None
    error_line: int | None = None
    lines: YamlDoc = field(default_factory=lambda: YamlDoc(""))
    """JSON is parsed by ``json``; the same text read as YAML gives key lines and columns."""
    error_column: int | None = None

    def line_of(self, *keypath: str | int) -> int | None:
        return self.lines.line_of(*keypath)

    def column_at(self, line: int) -> int | None:
        """Where a diagnostic on ``line`` points: the JSON error's column, else the first key
        or item of the line."""
        if self.error_column is not None and line == self.error_line:
            return self.error_column
        return self.lines.column_at(line)

    @functools.cached_property
    def typed(self) -> tuple[JobSettings | None, list[Problem]]:
        """The job read into the typed model, once per document: ``envkit train`` validates
        the job and then trains on the same document."""
        return read_job(self.data)


def load_job(path: str | Path) -> JobDoc:
    """Read a job file, opened non-blocking and checked on the open descriptor, so a FIFO or
    a device such as ``/dev/zero`` is reported instead of read.

    :raises FileNotFoundError: no such file (a usage error).
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        return JobDoc(path.name, error=f"cannot be read: {exc.strerror or exc}")
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, socket or device"
            return JobDoc(path.name, error=f"not a regular file ({kind}); not read")
        try:
            raw = read_fd_bounded(fd, MAX_JOB_BYTES)  # in pieces: no 8 MiB buffer per job
        except OSError as exc:
            return JobDoc(path.name, error=f"cannot be read: {exc.strerror or exc}")
    finally:
        os.close(fd)
    return parse_job(path.name, raw)


MAX_JOB_BYTES = 8 * 1024 * 1024
"""A job file is a few KiB; anything larger is reported, not parsed."""

MAX_INT_DIGITS = 64
"""Job numbers are steps, sizes and seeds; a longer integer is reported, not parsed."""
_LONG_INT = re.compile(rb"\d{%d}" % (MAX_INT_DIGITS + 1))


MAX_DEPTH = 32
"""A job nests four or five levels; checks (the JSON Schema among them) recurse per level."""


def _too_deep(data: Any) -> bool:
    stack = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False


class _LongInt(ValueError):
    pass


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _LongInt
    return int(text)


def parse_job(name: str, raw: bytes) -> JobDoc:
    """Parse a job file; never raises over its content (EK611 reports what went wrong)."""
    if len(raw) > MAX_JOB_BYTES:
        return JobDoc(name, error=f"file is {len(raw) / 2**20:.1f} MiB; a job file is a few KiB")
    try:
        data = json.loads(raw, parse_int=_bounded_int)
    except UnicodeDecodeError:
        return JobDoc(name, error="not UTF-8")
    except json.JSONDecodeError as exc:
        return JobDoc(name, error=f"invalid JSON: {exc.msg}", error_line=exc.lineno,
                      error_column=exc.colno)
    except _LongInt:
        found = _LONG_INT.search(raw)
        start = found.start() if found else None
        return JobDoc(name, error=f"an integer has more than {MAX_INT_DIGITS} digits",
                      error_line=None if start is None else raw.count(b"\n", 0, start) + 1,
                      error_column=None if start is None else start - raw.rfind(b"\n", 0, start))
    except RecursionError:
        return JobDoc(name, error="invalid JSON: nested too deeply")
    except ValueError as exc:  # e.g. a number json itself refuses to convert
        return JobDoc(name, error=f"invalid JSON: {exc}")
    if _too_deep(data):
        return JobDoc(name, error=f"nested more than {MAX_DEPTH} levels deep")
    return JobDoc(name, data=data, lines=parse_yaml(name, raw))
