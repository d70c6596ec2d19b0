"""The GRPO job JSON model: the platform's ``rl`` job file, parsed once, with line numbers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit.yamlio import YamlDoc, parse_yaml

__all__ = ["JobDoc", "load_job", "parse_job"]


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


def parse_job(name: str, raw: bytes) -> JobDoc:
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        return JobDoc(name, error="not UTF-8")
    except json.JSONDecodeError as exc:
        return JobDoc(name, error=f"invalid JSON: {exc.msg}", error_line=exc.lineno)
    return JobDoc(name, data=data, lines=parse_yaml(name, raw))
