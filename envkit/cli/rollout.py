"""``envkit rollout``: run a package locally against a policy and report rewards.

Parse -> ``envkit.trainer.rollout.rollout_package`` -> render. Results (per-agent mean reward)
on stdout; logs and progress on stderr. Exit 0 when every row finished, 1 when a row failed or a
server did not start (with its log tail and likely EK code), 2 on usage errors.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape

from envkit.cli._common import sigterm_as_interrupt

__all__ = ["rollout_command"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@click.command("rollout")
@click.argument("package", type=_DIR)
@click.option("--dataset", required=True, type=_DIR, help="Dataset dir with training.jsonl.")
@click.option("--model", required=True, type=_DIR, help="HF model directory (the policy).")
@click.option("--split", default="training", show_default=True,
              type=click.Choice(["training", "validation"]))
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N rows.")
@click.option("--num-repeats", default=1, show_default=True, type=click.IntRange(min=1),
              help="Rollouts per row.")
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(min=1))
@click.option("--temperature", default=1.0, show_default=True, type=click.FloatRange(min=0))
@click.option("--max-tokens", default=64, show_default=True, type=click.IntRange(min=1))
@click.option("--timeout", "timeout_s", default=600.0, show_default=True,
              type=click.FloatRange(min=1), help="Per-row request timeout (s).")
@click.option("--backend", default="hf", show_default=True, type=click.Choice(["hf", "vllm"]),
              help="hf: transformers on CPU; vllm: GPU.")
@click.option("--gym-version", default="0.7.0", show_default=True)
@click.option("--gym-python", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="CPython 3.13 for Gym (default: PATH, pyenv, $ENVKIT_GYM_PYTHON).")
@click.option("--allow-python-override", is_flag=True,
              help="Install nemo-gym on a 3.13 older than its Requires-Python floor.")
@click.option("--offline", is_flag=True, help="No index for any install: wheels/ must cover all.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write Gym's rollout rows (JSONL) here.")
@click.option("--format", "output_format", default="human", show_default=True,
              type=click.Choice(["human", "json"]))
def rollout_command(
    package: Path, dataset: Path, model: Path, split: str, limit: int | None, num_repeats: int,
    concurrency: int, temperature: float, max_tokens: int, timeout_s: float, backend: str,
    gym_version: str, gym_python: Path | None, allow_python_override: bool, offline: bool,
    output: Path | None, output_format: str,
) -> int:
    """Roll out PACKAGE's real Gym servers against MODEL on the dataset's rows."""
    from envkit.gym.client import RequestOptions
    from envkit.gym.types import GymRuntimeError, RuntimeOptions
    from envkit.gym.venv import GymVenvError
    from envkit.trainer.rollout import RolloutRequest, rollout_package

    err = Console(stderr=True)
    _setup_logging(err)
    request = RolloutRequest(
        package=package, dataset=dataset, model=model, output=output, split=split, limit=limit,
        num_repeats=num_repeats, backend=backend,
        requests=RequestOptions(temperature=temperature, max_tokens=max_tokens,
                                concurrency=concurrency, timeout_s=timeout_s),
        runtime=RuntimeOptions(gym_version=gym_version, gym_python=gym_python,
                               allow_python_override=allow_python_override, offline=offline),
    )
    try:
        with sigterm_as_interrupt():
            summary = rollout_package(request, on_result=lambda r: _progress(err, r))
    except GymRuntimeError as exc:
        code = f"{exc.code} " if exc.code else ""
        err.print(f"[red]error:[/red] {escape(f'{code}{exc}')}")
        if exc.log_tail:
            err.print(exc.log_tail, markup=False, highlight=False)
        return 1
    except (GymVenvError, FileNotFoundError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    _render(summary, output_format, output)
    return summary.exit_code


def _setup_logging(err: Console) -> None:
    handler = RichHandler(console=err, show_path=False, show_time=False)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)


def _progress(err: Console, result: Any) -> None:
    if result.ok:
        err.print(f"row {result.index} {escape(f'[{result.agent}]')} reward={result.reward:.3f}",
                  highlight=False)
    else:
        err.print(f"[red]row {result.index} failed:[/red] {escape(str(result.failure_reason))}",
                  highlight=False)


def _render(summary: Any, output_format: str, output: Path | None) -> None:
    if output_format == "json":
        click.echo(json.dumps(summary.to_json(), indent=2))
        return
    for agent, mean in summary.mean_reward.items():
        click.echo(f"{agent}\tmean_reward={mean:.4f}")
    click.echo(f"rollouts={len(summary.results)} failed={len(summary.failed)} "
               f"ready_s={summary.ready_s:.1f} rollout_s={summary.rollout_s:.1f}"
               + (f" output={output}" if output else ""))
    sys.stdout.flush()
