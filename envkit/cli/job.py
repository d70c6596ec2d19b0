"""``envkit job show|status|logs|metrics|cancel|wait NAME``: follow a GRPO job on NeMo Platform;
each subcommand calls one function of ``envkit.platform.commands``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkit.cli._common import VERBOSITY_KEY, common_options, output_path_option, run_state
from envkit.cli._extras import require_extra

if TYPE_CHECKING:
    from collections.abc import Callable

    from envkit.platform.commands import Where
    from envkit.platform.outcomes import JobLogs, JobMetrics, JobReply, JobShow

__all__ = ["job_group", "platform_options", "where_from"]

_OUT = click.Path(file_okay=False, path_type=Path)


def platform_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--workspace/--base-url``; the token only ever comes from the environment or config."""
    func = click.option("--base-url", default=None, metavar="URL",
                        help="Platform URL (default: NMP_BASE_URL, the nemo CLI's context, "
                             "http://127.0.0.1:8080).")(func)
    return click.option("--workspace", default=None, metavar="WS",
                        help="Workspace (default: NMP_WORKSPACE, the context's, 'default').")(func)


def where_from(base_url: str | None, workspace: str | None) -> Where:
    """The connection flags, and whether progress shows (not under ``-q``)."""
    from envkit.platform.commands import Where

    quiet = run_state(click.get_current_context()).get(VERBOSITY_KEY, 0) < 0
    return Where(base_url=base_url, workspace=workspace, show_progress=not quiet)


def _job_command(name: str, formats: tuple[str, ...] = ("json", "human"),
                 default: str = "json") -> Callable[[Callable[..., Any]], click.Command]:
    """A ``job`` subcommand: NAME, the platform options, -q/-v, --output-format."""
    def decorate(func: Callable[..., Any]) -> click.Command:
        func = common_options(formats, default=default)(func)
        func = platform_options(func)
        func = click.argument("name")(func)
        return job_group.command(name)(func)
    return decorate


@click.group("job")
def job_group() -> None:
    """Follow a GRPO job on NeMo Platform: show, status, logs, metrics, cancel, wait."""


@_job_command("show", default="human")
def show_command(name: str, workspace: str | None, base_url: str | None) -> JobShow:
    """The job with its provenance: package, dataset and job-file digests, the lock's target,
    the Gym and verifiers versions, envkit's version (as `envkit submit` recorded them)."""
    require_extra("job show", "platform")
    from envkit.platform.commands import show

    return show(where_from(base_url, workspace), name)


@_job_command("status")
def status_command(name: str, workspace: str | None, base_url: str | None) -> JobReply:
    """The job's status (status, steps, status_details, error_details)."""
    require_extra("job status", "platform")
    from envkit.platform.commands import status

    return status(where_from(base_url, workspace), name)


@_job_command("logs", default="human")
@click.option("--tail", "tail", type=click.IntRange(min=1), default=None, metavar="N",
              help="Only the last N lines.")
@click.option("--follow", "follow_logs", is_flag=True,
              help="Keep printing new lines until the job ends.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True,
              help="Lines per page.")
def logs_command(name: str, workspace: str | None, base_url: str | None, tail: int | None,
                 follow_logs: bool, limit: int) -> JobLogs:
    """The job's log lines (every page, or the last --tail N)."""
    require_extra("job logs", "platform")
    from envkit.platform.commands import logs

    return logs(where_from(base_url, workspace), name, tail=tail, follow=follow_logs,
                limit=limit)


# human is the table; `table` stays as its older name, so every command's people's format is
# spelled one way.
@_job_command("metrics", formats=("human", "json", "table"), default="human")
@output_path_option(type=_OUT, default=None, help="Write metrics.jsonl and reward_curve.png here.")
def metrics_command(name: str, workspace: str | None, base_url: str | None,
                    output: Path | None) -> JobMetrics:
    """Training metrics (train_reward, val_accuracy, ...) by step, as a local run logs them."""
    require_extra("job metrics", "platform")
    from envkit.platform.commands import metrics

    return metrics(where_from(base_url, workspace), name, output)


@_job_command("cancel")
def cancel_command(name: str, workspace: str | None, base_url: str | None) -> JobReply:
    """Ask the platform to cancel the job; its reply is the result."""
    require_extra("job cancel", "platform")
    from envkit.platform.commands import cancel

    return cancel(where_from(base_url, workspace), name)


@_job_command("wait", default="human")
@output_path_option(type=_OUT, default=None,
                    help="Write metrics.jsonl and reward_curve.png here at the end.")
def wait_command(name: str, workspace: str | None, base_url: str | None,
                 output: Path | None) -> JobReply:
    """Follow the job to completed/error/cancelled; exit 0 only on completed. Ctrl-C detaches
    (the job keeps running)."""
    require_extra("job wait", "platform")
    from envkit.platform.commands import wait

    return wait(where_from(base_url, workspace), name, output)
