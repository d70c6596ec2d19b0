"""The library behind ``envkit submit`` and ``envkit job``: one function per command, each
returning an outcome (``envkit.platform.outcomes``) for ``envkit.output.render``.

httpx is imported only once a client is opened, after the inputs were checked, so a missing
``platform`` extra is reported by name instead of as an ImportError deep inside.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from envkit.metrics.records import metrics_records, write_metrics
from envkit.platform import jobs
from envkit.platform.connection import resolve_connection
from envkit.platform.errors import SubmitRejected, UploadInterrupted
from envkit.platform.outcomes import JobLogs, JobMetrics, JobReply, JobShow, SubmitOutcome
from envkit.platform.progress import live_status, status_line, upload_progress
from envkit.validate.gate import GateRequest, gate_package

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from envkit.model.diagnostics import Diagnostic
    from envkit.platform.http import PlatformClient
    from envkit.platform.submit import SubmitResult
    from envkit.platform.upload import Progress

__all__ = ["SubmitRequest", "Where", "cancel", "check_submission", "logs", "metrics", "show",
           "status", "submit", "upload_outputs", "wait"]

_LOG = logging.getLogger("envkit.platform")


@dataclass(frozen=True, slots=True)
class Where:
    """``--base-url/--workspace`` as given (``None``: environment, then the nemo CLI's context)."""

    base_url: str | None = None
    workspace: str | None = None
    show_progress: bool = True
    """Bars and the live status line on stderr (off with ``-q``)."""


@dataclass(frozen=True, slots=True)
class SubmitRequest:
    package: Path
    dataset: Path
    job: Path
    gate: GateRequest = field(default_factory=GateRequest)
    """Validation settings as flags gave them (``check_submission`` sets dataset and job)."""
    where: Where = field(default_factory=Where)
    name: str | None = None
    model: str | None = None
    wait: bool = False
    output: Path | None = None


def _client(where: Where) -> PlatformClient:
    from envkit.platform.http import PlatformClient

    return PlatformClient(resolve_connection(where.base_url, where.workspace))


@contextlib.contextmanager
def _job(where: Where, name: str) -> Iterator[tuple[PlatformClient, jobs.JobRef]]:
    with _client(where) as client:
        yield client, jobs.JobRef(client.connection.workspace, name)


@contextlib.contextmanager
def _uploading(show: bool) -> Iterator[Progress]:
    """The upload's progress; Ctrl-C becomes ``UploadInterrupted``, which says how to resume."""
    try:
        with upload_progress(show) as progress:
            yield progress
    except KeyboardInterrupt:
        msg = ("interrupted during upload; nothing was marked complete. Run the same command "
               "again to finish the upload without resending what is there.")
        raise UploadInterrupted(msg) from None


def check_submission(request: SubmitRequest) -> None:
    """The package, dataset and job through ``envkit validate``'s gate; a secret in the
    package (EK210) refuses the submission whatever the selection says.

    :raises SubmitRejected: the run is not valid, or the package holds a secret.
    """
    flags = replace(request.gate.flags, dataset=request.dataset, job=request.job)
    run = gate_package(request.package, replace(request.gate, flags=flags))
    secrets = secrets_in(request.package)
    if not run.valid or secrets:
        shown = [d for r in run.reports for d in r.diagnostics if d.code != "EK210"]
        raise SubmitRejected([*shown, *secrets])


def secrets_in(package: Path) -> list[Diagnostic]:
    """EK210 as an error for each secret in ``package``: secrets are never uploaded, so no
    ``--ignore`` or ``--no-strict`` lets one through."""
    from envkit.model.diagnostics import Severity
    from envkit.model.secrets import find_secrets
    from envkit.model.tree import walk_files
    from envkit.validators.secrets import EK210

    if not package.is_dir():
        return []
    return [EK210.at(s.path, f"`{s.path}` holds a secret: {s.kind} ({s.shown}); it is never "
                     "uploaded", line=s.line, severity=Severity.ERROR)
            for s in find_secrets(package, walk_files(package))]


def submit(request: SubmitRequest) -> SubmitOutcome:
    """Validate, upload both FileSets, create the job; with ``wait``, follow it to its end.

    :raises SubmitRejected: validation failed; nothing was uploaded.
    :raises PlatformError: the platform refused or could not be reached.
    """
    from envkit.platform.submit import job_spec

    check_submission(request)
    job_spec(request.job, request.model)  # a job without a model sends nothing
    with _job(request.where, request.name or jobs.new_job_name()) as (client, ref):
        result = _upload_and_create(client, ref, request)
        outcome = SubmitOutcome(ref, result.job, result.created, result.environment,
                                result.dataset)
        if not request.wait:
            return outcome
        final, written = _follow(client, ref, request.output, request.where.show_progress)
    return replace(outcome, final_status=final, written=written)


def _upload_and_create(client: PlatformClient, ref: jobs.JobRef,
                       request: SubmitRequest) -> SubmitResult:
    from envkit.platform.submit import submit_job

    with _uploading(request.where.show_progress) as progress:
        result = submit_job(client, ref, request.job, request.package, request.dataset,
                            progress, request.model)
    stats = (result.environment.stats, result.dataset.stats)
    sent = (f"{sum(s.files_sent for s in stats)} files, "
            f"{sum(s.bytes_sent for s in stats) / 1e6:.1f} MB")
    verb = "created" if result.created else "attached to existing"
    _LOG.info("%s job %s/%s (environment %s, dataset %s; sent %s)", verb, ref.workspace,
              ref.name, result.environment.ref, result.dataset.ref, sent)
    return result


def _follow(client: PlatformClient, ref: jobs.JobRef, output: Path | None,
            show: bool) -> tuple[dict[str, Any], tuple[Path, ...]]:
    """Poll to a terminal status with one live line; Ctrl-C detaches (the job keeps running)."""
    try:
        with live_status(show) as update:
            final = jobs.wait_job(client, ref, lambda s: update(f"{ref.name}: {status_line(s)}"))
    except KeyboardInterrupt:
        _LOG.warning("detached; the job keeps running. Follow it again with: envkit job wait "
                     "%s --workspace %s", ref.name, ref.workspace)
        raise
    written = _write_results(final, output) if output is not None else ()
    if final.get("status") != "completed":
        detail = final.get("error_details") or {}
        _LOG.error("job %s ended %s%s", ref.name, final.get("status"),
                   f": {json.dumps(detail)}" if detail else "")
    return final, written


def _write_results(status: dict[str, Any], out_dir: Path) -> tuple[Path, ...]:
    """``metrics.jsonl`` and ``reward_curve.png``, as a local ``envkit train`` run writes them."""
    from envkit.metrics.plot import reward_curve

    records = metrics_records(status)
    written = [write_metrics(records, out_dir)]
    png = reward_curve(records, out_dir / "reward_curve.png")
    if png is not None:
        written.append(png)
    for path in written:
        _LOG.info("wrote %s", path)
    return tuple(written)


def status(where: Where, name: str) -> JobReply:
    with _job(where, name) as (client, ref):
        return JobReply("status", ref, jobs.job_status(client, ref))


def show(where: Where, name: str) -> JobShow:
    """The job and the provenance ``envkit submit`` attached to it."""
    with _job(where, name) as (client, ref):
        job = jobs.get_job(client, ref)
    return JobShow(ref, job, jobs.job_provenance(job))


def cancel(where: Where, name: str) -> JobReply:
    with _job(where, name) as (client, ref):
        return JobReply("cancel", ref, jobs.cancel_job(client, ref))


def wait(where: Where, name: str, output: Path | None) -> JobReply:
    """Follow the job to ``completed``/``error``/``cancelled`` (exit 0 only on completed)."""
    with _job(where, name) as (client, ref):
        final, written = _follow(client, ref, output, where.show_progress)
    return JobReply("wait", ref, final, written)


def metrics(where: Where, name: str, output: Path | None) -> JobMetrics:
    with _job(where, name) as (client, ref):
        current = jobs.job_status(client, ref)
    written = _write_results(current, output) if output is not None else ()
    return JobMetrics(ref, metrics_records(current), written)


def logs(where: Where, name: str, *, tail: int | None, follow: bool, limit: int) -> JobLogs:
    """Every page (or the last ``tail`` lines); ``follow`` keeps polling until the job ends.
    The first page is fetched here, so an unreachable platform fails the command itself."""
    with contextlib.ExitStack() as stack:  # closes the client here only if this part fails
        client, ref = stack.enter_context(_job(where, name))
        seen: set[tuple[str, str]] = set()
        first = list(_pages(client, ref, seen, limit=tail or limit, tail=tail))
        owned = stack.pop_all()
    return JobLogs(ref, _more_lines(owned, client, ref, first, seen, follow, limit))


def _more_lines(owned: contextlib.ExitStack, client: PlatformClient, ref: jobs.JobRef,
                first: list[dict[str, Any]], seen: set[tuple[str, str]], follow: bool,
                limit: int) -> Iterator[dict[str, Any]]:
    with owned:
        yield from first
        while follow and jobs.job_status(client, ref).get("status") not in jobs.TERMINAL:
            time.sleep(2.0)
            yield from _pages(client, ref, seen, limit=limit, tail=None)


def _pages(client: PlatformClient, ref: jobs.JobRef, seen: set[tuple[str, str]], *,
           limit: int, tail: int | None) -> Iterator[dict[str, Any]]:
    """Lines not in ``seen`` (so ``--follow`` yields each line once), page after page."""
    cursor = None
    while True:
        page = jobs.job_logs(client, ref, limit=limit, cursor=cursor, tail=tail)
        for item in page.get("data", []):
            key = (str(item.get("timestamp")), str(item.get("message")))
            if key not in seen:
                seen.add(key)
                yield item
        cursor = page.get("next_page")
        if tail or not cursor:
            return


def upload_outputs(where: Where, package: Path, dataset: Path | None) -> None:
    """Upload what ``build``/``convert`` wrote, as ``submit`` does, and log the refs.

    :raises SubmitRejected: the package holds a secret (``--include`` let one in).
    """
    from envkit.platform.submit import publish, publish_package

    if secrets := secrets_in(package):
        raise SubmitRejected(secrets)

    with _client(where) as client:
        ws = client.connection.workspace
        with _uploading(where.show_progress) as progress:
            refs = [("environment", publish_package(client, ws, package, progress).ref)]
            if dataset is not None and (dataset / "training.jsonl").is_file():
                refs.append(("dataset", publish(client, ws, dataset, "dataset", dataset.name,
                                                progress).ref))
    for purpose, ref in refs:
        _LOG.info("%s FileSet: %s", purpose, ref)
