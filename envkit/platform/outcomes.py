"""What ``envkit submit`` and ``envkit job ...`` hand to ``envkit.output.render``, and their JSON.

Each outcome knows its versioned JSON shape (``envkit schema submit`` / ``envkit schema
job-output``) and the exit status it stands for; how it looks for people is the renderer's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from envkit.platform.jobs import JobRef
    from envkit.platform.submit import Published

__all__ = [
    "VERSION",
    "FileSetDict",
    "JobLogs",
    "JobLogsDict",
    "JobMetrics",
    "JobMetricsDict",
    "JobReply",
    "JobReplyDict",
    "JobShow",
    "JobShowDict",
    "SubmitDict",
    "SubmitOutcome",
]

VERSION: Literal["1.0"] = "1.0"


class FileSetDict(TypedDict):
    ref: str
    created: bool
    files_sent: int
    bytes_sent: int


class SubmitDict(TypedDict):
    """``envkit schema submit``."""

    version: Literal["1.0"]
    workspace: str
    name: str
    created: bool
    job: dict[str, Any]
    environment: FileSetDict
    dataset: FileSetDict
    final_status: dict[str, Any] | None
    written: list[str]


class JobReplyDict(TypedDict):
    """``envkit schema job-output`` for ``job status``, ``job cancel`` and ``job wait``."""

    version: Literal["1.0"]
    command: str
    workspace: str
    name: str
    reply: dict[str, Any]
    written: list[str]


class JobShowDict(TypedDict):
    """``envkit schema job-output`` for ``job show``."""

    version: Literal["1.0"]
    command: Literal["show"]
    workspace: str
    name: str
    job: dict[str, Any]
    provenance: dict[str, Any] | None
    """``envkit schema provenance``: the record ``envkit submit`` attached, or null."""


class JobMetricsDict(TypedDict):
    """``envkit schema job-output`` for ``job metrics``."""

    version: Literal["1.0"]
    command: Literal["metrics"]
    workspace: str
    name: str
    records: list[dict[str, Any]]
    written: list[str]


class JobLogsDict(TypedDict):
    """``envkit schema job-output`` for ``job logs``."""

    version: Literal["1.0"]
    command: Literal["logs"]
    workspace: str
    name: str
    lines: list[dict[str, Any]]


def ended_ok(status: dict[str, Any] | None) -> bool:
    return status is None or status.get("status") == "completed"


@dataclass(frozen=True, slots=True)
class SubmitOutcome:
    """The job created (or attached to), what went up, and with ``--wait`` how it ended."""

    ref: JobRef
    job: dict[str, Any]
    created: bool
    environment: Published
    dataset: Published
    final_status: dict[str, Any] | None = None
    written: tuple[Path, ...] = ()

    @property
    def exit_code(self) -> int:
        return 0 if ended_ok(self.final_status) else 1

    def to_json(self) -> SubmitDict:
        return {"version": VERSION, "workspace": self.ref.workspace, "name": self.ref.name,
                "created": self.created, "job": self.job,
                "environment": _fileset(self.environment), "dataset": _fileset(self.dataset),
                "final_status": self.final_status, "written": [str(p) for p in self.written]}


def _fileset(p: Published) -> FileSetDict:
    return {"ref": p.ref, "created": p.created, "files_sent": p.stats.files_sent,
            "bytes_sent": p.stats.bytes_sent}


@dataclass(frozen=True, slots=True)
class JobReply:
    """``job status``, ``job cancel`` and ``job wait``: the platform's reply for the job."""

    command: str
    ref: JobRef
    reply: dict[str, Any]
    written: tuple[Path, ...] = ()

    @property
    def exit_code(self) -> int:
        return 0 if self.command != "wait" or ended_ok(self.reply) else 1

    def to_json(self) -> JobReplyDict:
        return {"version": VERSION, "command": self.command, "workspace": self.ref.workspace,
                "name": self.ref.name, "reply": self.reply,
                "written": [str(p) for p in self.written]}


@dataclass(frozen=True, slots=True)
class JobShow:
    """``job show``: the job as the platform keeps it, and the provenance it carries."""

    ref: JobRef
    job: dict[str, Any]
    provenance: dict[str, Any] | None
    exit_code: int = 0

    def to_json(self) -> JobShowDict:
        return {"version": VERSION, "command": "show", "workspace": self.ref.workspace,
                "name": self.ref.name, "job": self.job, "provenance": self.provenance}


@dataclass(frozen=True, slots=True)
class JobMetrics:
    """``job metrics``: one record per training step, the fields a local run logs."""

    ref: JobRef
    records: list[dict[str, Any]]
    written: tuple[Path, ...] = ()
    exit_code: int = 0

    def to_json(self) -> JobMetricsDict:
        return {"version": VERSION, "command": "metrics", "workspace": self.ref.workspace,
                "name": self.ref.name, "records": self.records,
                "written": [str(p) for p in self.written]}


@dataclass(frozen=True, slots=True)
class JobLogs:
    """``job logs``: lines as they arrive (``--follow`` keeps the iterator open)."""

    ref: JobRef
    lines: Iterable[dict[str, Any]]
    exit_code: int = field(default=0)

    def to_json(self, lines: list[dict[str, Any]]) -> JobLogsDict:
        return {"version": VERSION, "command": "logs", "workspace": self.ref.workspace,
                "name": self.ref.name, "lines": lines}
