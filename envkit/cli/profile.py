"""``envkit profile``: which rows of a dataset teach this policy?

Exit 0 when every reply was scored (and, with ``--keep``, the curated dataset was written), 1
when a rollout failed, a server did not start or the band keeps no training row, 2 on usage
errors or without the ``train`` extra, 130 on Ctrl-C or SIGTERM (every server torn down first).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkit.cli._common import (
    common_options,
    local_gym_options,
    sigterm_as_interrupt,
)
from envkit.cli._extras import precheck, require_backend

if TYPE_CHECKING:
    from envkit.profile import ProfileReport

__all__ = ["profile_command"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("profile")
@click.argument("package", type=_DIR)
@click.option("--dataset", required=True, type=_DIR,
              help="Dataset dir: training.jsonl (+ validation.jsonl), every row profiled.")
@click.option("--model", required=True, type=_DIR, help="HF model directory (the policy).")
@click.option("--job", type=_FILE, help="GRPO job JSON: G (num_generations_per_prompt), "
                                        "temperature, top_k, max_new_tokens, seed, batch size.")
@click.option("-o", "--output", "output_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write profile.jsonl here (and, with --keep, the curated dataset/).")
@click.option("--keep", "band", metavar="LOW,HIGH",
              help="Write OUTPUT/dataset/ with only the rows whose pass rate lies in "
                   "[LOW, HIGH] (needs -o).")
@click.option("--pass-threshold", "profile_pass_threshold", default=None, type=float,
              help="A reply passes at this reward or above (profile-pass-threshold, "
                   "default 1.0).")
@click.option("--isolated", is_flag=True, help="Ignore envkit.toml and [tool.envkit].")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N rows of each split.")
@click.option("--timeout", "timeout_s", default=600.0, show_default=True,
              type=click.FloatRange(min=1), help="Per-rollout request timeout (s).")
@local_gym_options
@common_options()
def profile_command(package: Path, dataset: Path, model: Path, job: Path | None,
                    output_dir: Path | None, band: str | None,
                    profile_pass_threshold: float | None,
                    isolated: bool, limit: int | None, timeout_s: float, backend: str,
                    **runtime: Any) -> ProfileReport:
    """Sample MODEL's G replies (the job's num_generations_per_prompt) on every row of the
    dataset through PACKAGE's real Gym servers, at the job's temperature, top_k, reply length
    and seed, and report each row's pass rate, mean reward and spread (profile.jsonl under
    -o). With --keep LOW,HIGH, write a curated dataset of the rows whose pass rate lies in the
    band, and print the share of zero-variance groups (every reply scored alike: no gradient)
    before and after at the job's G. The same job, model and dataset give the same profile.
    """
    from envkit.profile import parse_band

    kept = parse_band(band) if band is not None else None
    if kept is not None and output_dir is None:
        raise click.UsageError("--keep writes a dataset: give -o DIR")
    precheck("profile", "train", package=package, dataset=dataset, job=job)
    require_backend("profile", backend)
    from rich.console import Console

    from envkit.gym import RuntimeOptions
    from envkit.profile import ProfileRequest, pass_threshold_for, run_profile

    err = Console(stderr=True)
    request = ProfileRequest(
        package=package, dataset=dataset, model=model, job=job, backend=backend,
        pass_threshold=pass_threshold_for(package, profile_pass_threshold, isolated=isolated),
        limit=limit, timeout_s=timeout_s, runtime=RuntimeOptions(**runtime))
    try:
        with sigterm_as_interrupt():
            return run_profile(request, band=kept, out_dir=output_dir, on_result=_Counter(err))
    except ValueError as exc:  # rows that are no JSON objects: the dataset is the user's input
        raise click.UsageError(str(exc)) from None


class _Counter:
    """Progress on stderr: a line every 50 rollouts scored, and every failure."""

    def __init__(self, err: Any) -> None:
        self.err = err
        self.done = 0

    def __call__(self, result: Any) -> None:
        from rich.markup import escape

        self.done += 1
        if not result.ok:
            self.err.print(f"[red]rollout {result.index} failed:[/red] "
                           f"{escape(str(result.failure_reason))}", highlight=False)
        elif self.done % 50 == 0:
            self.err.print(f"profile: {self.done} rollouts scored", highlight=False)
