"""``envkit rollout``: run a package locally against a policy and report rewards.

Exit 0 when every row finished, 1 when a row failed or a server did not start, 2 on usage
errors or without the ``train`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from envkit.cli._common import (
    common_options,
    local_gym_options,
    output_path_option,
    sigterm_as_interrupt,
)
from envkit.cli._extras import precheck, require_backend
from envkit.output.results import RolloutOutcome

__all__ = ["rollout_command"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command("rollout")
@click.argument("package", type=_DIR)
@click.option("--dataset", required=True, type=_DIR, help="Dataset dir with training.jsonl.")
@click.option("--model", required=True, type=_DIR, help="HF model directory (the policy).")
@click.option("--split", default="training", show_default=True,
              type=click.Choice(["training", "validation"]), help="Which dataset file to roll out.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N rows.")
@click.option("--num-repeats", default=1, show_default=True, type=click.IntRange(min=1),
              help="Rollouts per row.")
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(min=1),
              help="Rows in flight at once.")
@click.option("--temperature", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="Sampling temperature of the policy.")
@click.option("--max-tokens", default=64, show_default=True, type=click.IntRange(min=1),
              help="Most tokens the policy generates per turn.")
@click.option("--timeout", "timeout_s", default=600.0, show_default=True,
              type=click.FloatRange(min=1), help="Per-row request timeout (s).")
@local_gym_options
@output_path_option(type=click.Path(dir_okay=False, path_type=Path),
                    help="Write Gym's rollout rows (JSONL) here.")
@common_options()
def rollout_command(
    package: Path, dataset: Path, model: Path, split: str, limit: int | None, num_repeats: int,
    concurrency: int, temperature: float, max_tokens: int, timeout_s: float, backend: str,
    output: Path | None, **runtime: Any,
) -> RolloutOutcome:
    """Roll out PACKAGE's real Gym servers against MODEL on the dataset's rows."""
    precheck("rollout", "train", package=package, dataset=dataset)
    require_backend("rollout", backend)
    from rich.console import Console

    from envkit.gym import RequestOptions, RuntimeOptions
    from envkit.rollout import RolloutRequest, rollout_package

    err = Console(stderr=True)
    request = RolloutRequest(
        package=package, dataset=dataset, model=model, output=output, split=split, limit=limit,
        num_repeats=num_repeats, backend=backend,
        requests=RequestOptions(temperature=temperature, max_tokens=max_tokens,
                                concurrency=concurrency, timeout_s=timeout_s),
        runtime=RuntimeOptions(**runtime),
    )
    try:
        with sigterm_as_interrupt():
            summary = rollout_package(request, on_result=lambda r: _progress(err, r))
    except ValueError as exc:  # rows that are no JSON objects: the dataset is the user's input
        raise click.UsageError(str(exc)) from None
    return RolloutOutcome(summary, output)


def _progress(err: Any, result: Any) -> None:
    from rich.markup import escape

    if result.ok:
        err.print(f"row {result.index} {escape(f'[{result.agent}]')} reward={result.reward:.3f}",
                  highlight=False)
    else:
        err.print(f"[red]row {result.index} failed:[/red] {escape(str(result.failure_reason))}",
                  highlight=False)
