"""What ``envkit submit`` and ``envkit job ...`` hand to ``envkit.output.render``, and their JSON.

Each outcome knows its versioned JSON shape (``envkit schema submit`` / ``envkit schema
job-output``) and the exit status it stands for; how it looks for people is the renderer's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from envkit.platform.jobs import JobRef
    from envkit.platform.submit import Published

__all__ = ["VERSION", "JobLogs", "JobMetrics", "JobReply", "SubmitOutcome"]

VERSION = "1.0"


def _ref(ref: JobRef) -> dict[str, str]:
    return {"workspace": ref.workspace, "name": ref.name}


def ended_ok(status: dict[str, Any] | None) -> bool:
    return status is None or status.get("status") == "completed"


@dataclass(frozen=True)
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

    def to_json(self) -> dict[str, Any]:
        def fileset(p: Published) -> dict[str, Any]:
            return {"ref": p.ref, "created": p.created, "files_sent": p.stats.files_sent,
                    "bytes_sent": p.stats.bytes_sent}

        return {"version": VERSION, **_ref(self.ref), "created": self.created, "job": self.job,
                "environment": fileset(self.environment), "dataset": fileset(self.dataset),
                "final_status": self.final_status, "written": [str(p) for p in self.written]}


@dataclass(frozen=True)
class JobReply:
    """``job status``, ``job cancel`` and ``job wait``: the platform's reply for the job."""

    command: str
    ref: JobRef
    reply: dict[str, Any]
    written: tuple[Path, ...] = ()

    @property
    def exit_code(self) -> int:
        return 0 if self.command != "wait" or ended_ok(self.reply) else 1

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "command": self.command, **_ref(self.ref),
                "reply": self.reply, "written": [str(p) for p in self.written]}


@dataclass(frozen=True)
class JobMetrics:
    """``job metrics``: one record per training step, the fields a local run logs."""

    ref: JobRef
    records: list[dict[str, Any]]
    written: tuple[Path, ...] = ()
    exit_code: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "command": "metrics", **_ref(self.ref),
                "records": self.records, "written": [str(p) for p in self.written]}


@dataclass(frozen=True)
class JobLogs:
    """``job logs``: lines as they arrive (``--follow`` keeps the iterator open)."""

    ref: JobRef
    lines: Iterable[dict[str, Any]]
    exit_code: int = field(default=0)

    def to_json(self, lines: list[dict[str, Any]]) -> dict[str, Any]:
        return {"version": VERSION, "command": "logs", **_ref(self.ref), "lines": lines}
