"""The GRPO job JSON model: the platform's ``rl`` job file, parsed once, with line numbers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit.yamlio import YamlDoc, parse_yaml

__all__ = ["MAX_JOB_BYTES", "JobDoc", "load_job", "parse_job"]


@dataclass(frozen=True)
class JobDoc:
    path: str
    data: Any = None
    error: str | None = None
    error_line: int | None = None
    lines: YamlDoc = field(default_factory=lambda: YamlDoc(""))
    """JSON is parsed by ``json``; the same text read as YAML gives key line numbers."""

    def line_of(self, *keypath: str | int) -> int | None:
        return self.lines.line_of(*keypath)


def load_job(path: str | Path) -> JobDoc:
    """Read a job file; a missing file is a usage error (raises ``FileNotFoundError``)."""
    path = Path(path)
    return parse_job(path.name, path.read_bytes())


MAX_JOB_BYTES = 8 * 1024 * 1024
"""A job file is a few KiB; anything larger is reported, not parsed."""


def parse_job(name: str, raw: bytes) -> JobDoc:
    """Parse a job file; never raises over its content (EK611 reports what went wrong)."""
    if len(raw) > MAX_JOB_BYTES:
        return JobDoc(name, error=f"file is {len(raw) / 2**20:.1f} MiB; a job file is a few KiB")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        return JobDoc(name, error="not UTF-8")
    except json.JSONDecodeError as exc:
        return JobDoc(name, error=f"invalid JSON: {exc.msg}", error_line=exc.lineno)
    except RecursionError:
        return JobDoc(name, error="invalid JSON: nested too deeply")
    return JobDoc(name, data=data, lines=parse_yaml(name, raw))
