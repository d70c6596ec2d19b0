"""GRPO jobs on the customization service: create (idempotently), status, logs, cancel, wait."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from envkit.platform.errors import PlatformError

if TYPE_CHECKING:
    from collections.abc import Callable

    from envkit.platform.http import PlatformClient

__all__ = ["PROVENANCE_FIELD", "TERMINAL", "JobRef", "cancel_job", "create_job", "get_job",
           "job_logs", "job_provenance", "job_status", "new_job_name", "wait_job"]

TERMINAL = frozenset({"completed", "error", "cancelled"})
_REF_KEYS = ("model", "dataset", "environment")
PROVENANCE_FIELD = "envkit_provenance"
"""The job's ``custom_fields`` key for its provenance record (the platform rewrites the
``spec``, so a key of envkit's own there would not survive)."""


@dataclass(frozen=True, slots=True)
class JobRef:
    workspace: str
    name: str

    @property
    def url(self) -> str:
        ws, name = quote(self.workspace, safe=""), quote(self.name, safe="")
        return f"/apis/customization/v2/workspaces/{ws}/rl/jobs/{name}"


def new_job_name() -> str:
    """Chosen before the first POST, so a retried POST that gets 409 finds the job it made."""
    return f"rl-envkit-{secrets.token_hex(6)}"


def create_job(client: PlatformClient, ref: JobRef, spec: dict[str, Any],
               custom_fields: dict[str, Any] | None = None) -> tuple[dict[str, Any], bool]:
    """POST the job; on 409 attach to the existing job of that name if it has the same refs.
    Returns ``(job, created)``.

    :raises PlatformError: 422 (the platform's ``detail``), or 409 for a job with other inputs.
    """
    collection = ref.url.rsplit("/", 1)[0]
    body: dict[str, Any] = {"name": ref.name, "spec": spec}
    if custom_fields:
        body["custom_fields"] = custom_fields
    reply = client.request("POST", collection, json=body, ok=(200, 201, 409))
    if reply.status_code != 409:
        return reply.json(), True
    existing = client.json("GET", ref.url)
    theirs = existing.get("spec") or {}
    if any(theirs.get(k) != spec.get(k) for k in _REF_KEYS):
        msg = (f"job {ref.workspace}/{ref.name} already exists with other model/dataset/"
               "environment; pass another --name")
        raise PlatformError(msg, status=409)
    return existing, False


def get_job(client: PlatformClient, ref: JobRef) -> dict[str, Any]:
    """The job as the platform keeps it (spec, status, ``custom_fields``)."""
    return cast("dict[str, Any]", client.json("GET", ref.url))


def job_provenance(job: dict[str, Any]) -> dict[str, Any] | None:
    """The provenance record ``envkit submit`` attached; None for a job without one."""
    fields = job.get("custom_fields")
    record = fields.get(PROVENANCE_FIELD) if isinstance(fields, dict) else None
    return record if isinstance(record, dict) else None


def job_status(client: PlatformClient, ref: JobRef) -> dict[str, Any]:
    return cast("dict[str, Any]", client.json("GET", f"{ref.url}/status"))


def job_logs(client: PlatformClient, ref: JobRef, *, limit: int = 100, cursor: str | None = None,
             tail: int | None = None) -> dict[str, Any]:
    """One page of log lines; ``tail=N`` asks for the last N (the platform caps it at 10000)."""
    # The platform refuses `tail` together with `limit` (HTTP 400).
    params: dict[str, Any] = {"tail": min(int(tail), 10000)} if tail else {"limit": limit}
    if cursor:
        params["page_cursor"] = cursor
    return cast("dict[str, Any]", client.json("GET", f"{ref.url}/logs", params=params))


def cancel_job(client: PlatformClient, ref: JobRef) -> dict[str, Any]:
    return cast("dict[str, Any]", client.json("POST", f"{ref.url}/cancel"))


def wait_job(client: PlatformClient, ref: JobRef, on_update: Callable[[dict[str, Any]], None], *,
             interval: float = 2.0, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Poll until a terminal status (Ctrl-C propagates: the caller detaches, nothing cancelled)."""
    while True:
        status = job_status(client, ref)
        on_update(status)
        if status.get("status") in TERMINAL:
            return status
        sleep(interval)
