"""``envkit job status|logs|metrics|cancel|wait NAME``: follow a GRPO job on NeMo Platform."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from envkit.platform.http import PlatformClient
    from envkit.platform.jobs import JobRef

__all__ = ["follow", "job_group", "platform_call", "platform_options"]


def platform_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--workspace/--base-url``; the token only ever comes from the environment or config."""
    func = click.option("--base-url", default=None, metavar="URL",
                        help="Platform URL (default: NMP_BASE_URL, the nemo CLI's context, "
                             "http://127.0.0.1:8080).")(func)
    return click.option("--workspace", default=None, metavar="WS",
                        help="Workspace (default: NMP_WORKSPACE, the context's, 'default').")(func)


@contextlib.contextmanager
def platform_call(base_url: str | None, workspace: str | None) -> Iterator[PlatformClient]:
    """A client for one command; a PlatformError becomes one line on stderr and exit 1."""
    from envkit.platform import PlatformError, resolve_connection
    from envkit.platform.http import PlatformClient

    client = None
    try:
        client = PlatformClient(resolve_connection(base_url, workspace))
        yield client
    except PlatformError as exc:
        click.echo(f"envkit: error: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    finally:
        if client is not None:
            client.close()


def _ref(client: PlatformClient, name: str) -> JobRef:
    from envkit.platform.jobs import JobRef

    return JobRef(client.connection.workspace, name)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))


def _line(status: dict[str, Any]) -> str:
    from envkit.platform.metrics import latest, metrics_records

    records = metrics_records(status)
    steps = status.get("steps") or []
    current = next((s.get("name") for s in steps if s.get("status") not in ("completed",)), None)
    parts = [f"status {status.get('status')}"]
    if current:
        parts.append(f"step {current}")
    if records:
        parts.append(f"training step {records[-1]['step']}")
    for key in ("train_reward", "val_accuracy"):
        value = latest(records, key)
        if value is not None:
            parts.append(f"{key} {value:.4g}")
    return "  ".join(parts)


def follow(client: PlatformClient, ref: JobRef, out_dir: Path | None) -> int:
    """One live line until a terminal status; 0 only on ``completed``. Ctrl-C detaches."""
    from rich.console import Console
    from rich.live import Live

    from envkit.platform.jobs import wait_job

    console = Console(file=sys.stderr)
    try:
        with Live("", console=console, refresh_per_second=4, transient=False) as live:
            status = wait_job(client, ref, lambda s: live.update(f"{ref.name}: {_line(s)}"))
    except KeyboardInterrupt:
        click.echo(f"Detached; the job keeps running. Follow it again with: envkit job wait "
                   f"{ref.name} --workspace {ref.workspace}", err=True)
        return 130
    if out_dir is not None:
        _write_results(status, out_dir)
    if status.get("status") != "completed":
        detail = status.get("error_details") or {}
        click.echo(f"envkit: job {ref.name} ended {status.get('status')}"
                   + (f": {json.dumps(detail)}" if detail else ""), err=True)
        return 1
    return 0


def _write_results(status: dict[str, Any], out_dir: Path) -> list[Path]:
    from envkit.platform.metrics import metrics_records, write_metrics
    from envkit.plot import reward_curve

    records = metrics_records(status)
    written = [write_metrics(records, out_dir)]
    png = reward_curve(records, out_dir / "reward_curve.png")
    if png is not None:
        written.append(png)
    return written


@click.group("job")
def job_group() -> None:
    """Follow a GRPO job on NeMo Platform: status, logs, metrics, cancel, wait."""


@job_group.command("status")
@click.argument("name")
@platform_options
def status_command(name: str, workspace: str | None, base_url: str | None) -> int:
    """Print the job's status JSON (status, steps, status_details, error_details)."""
    from envkit.platform.jobs import job_status

    with platform_call(base_url, workspace) as client:
        _echo_json(job_status(client, _ref(client, name)))
    return 0


@job_group.command("logs")
@click.argument("name")
@platform_options
@click.option("--tail", "tail", type=int, default=None, metavar="N", help="Only the last N lines.")
@click.option("--follow", "follow_logs", is_flag=True, help="Keep printing new lines until the "
              "job ends.")
@click.option("--limit", type=int, default=100, show_default=True, help="Lines per page.")
def logs_command(name: str, workspace: str | None, base_url: str | None, tail: int | None,
                 follow_logs: bool, limit: int) -> int:
    """Print the job's log lines (every page, or the last --tail N)."""
    with platform_call(base_url, workspace) as client:
        ref = _ref(client, name)
        seen: set[tuple[str, str]] = set()
        _print_logs(client, ref, seen, limit=tail or limit, tail=tail)
        while follow_logs and not _terminal(client, ref):
            time.sleep(2.0)
            _print_logs(client, ref, seen, limit=limit, tail=None)
    return 0


def _terminal(client: PlatformClient, ref: JobRef) -> bool:
    from envkit.platform.jobs import TERMINAL, job_status

    return job_status(client, ref).get("status") in TERMINAL


def _print_logs(client: PlatformClient, ref: JobRef, seen: set[tuple[str, str]], *,
                limit: int, tail: int | None) -> None:
    """Every page (or just the last ``limit`` lines with ``tail``); lines in ``seen`` skipped
    so ``--follow`` prints each line once."""
    from envkit.platform.jobs import job_logs

    cursor = None
    while True:
        page = job_logs(client, ref, limit=limit, cursor=cursor, tail=tail)
        for item in page.get("data", []):
            key = (str(item.get("timestamp")), str(item.get("message")))
            if key in seen:
                continue
            seen.add(key)
            click.echo(f"{item.get('timestamp', '')} {item.get('job_step', '')}: "
                       f"{item.get('message', '')}")
        cursor = page.get("next_page")
        if tail or not cursor:
            return


@job_group.command("metrics")
@click.argument("name")
@platform_options
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Write metrics.jsonl and reward_curve.png here.")
@click.option("--output-format", "--format", "output_format", type=click.Choice(["table", "json"]),
              default="table", show_default=True, help="A table for people, JSON for scripts.")
def metrics_command(name: str, workspace: str | None, base_url: str | None,
                    out_dir: Path | None, output_format: str) -> int:
    """Training metrics (train_reward, val_accuracy, ...) by step, as a local run logs them."""
    from envkit.platform.jobs import job_status
    from envkit.platform.metrics import metrics_records

    with platform_call(base_url, workspace) as client:
        status = job_status(client, _ref(client, name))
    records = metrics_records(status)
    if output_format == "json":
        _echo_json(records)
    else:
        _print_table(records)
    if out_dir is not None:
        for path in _write_results(status, out_dir):
            click.echo(f"wrote {path}", err=True)
    return 0


def _print_table(records: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    names = sorted({k for r in records for k in r} - {"step"})
    table = Table("step", *names)
    for r in records:
        table.add_row(str(r["step"]), *(f"{r[n]:.4g}" if n in r else "" for n in names))
    Console(file=sys.stdout).print(table)


@job_group.command("cancel")
@click.argument("name")
@platform_options
def cancel_command(name: str, workspace: str | None, base_url: str | None) -> int:
    """Ask the platform to cancel the job; prints its reply."""
    from envkit.platform.jobs import cancel_job

    with platform_call(base_url, workspace) as client:
        _echo_json(cancel_job(client, _ref(client, name)))
    return 0


@job_group.command("wait")
@click.argument("name")
@platform_options
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Write metrics.jsonl and reward_curve.png here at the end.")
def wait_command(name: str, workspace: str | None, base_url: str | None,
                 out_dir: Path | None) -> int:
    """Follow the job to completed/error/cancelled; exit 0 only on completed."""
    with platform_call(base_url, workspace) as client:
        return follow(client, _ref(client, name), out_dir)
