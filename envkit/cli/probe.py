"""``envkit probe``: will this package train?

Exit 0 when the package was probed and no error was found, 1 when an error was (each a
diagnostic with its EK8xx code, or the static rule that stopped it), 2 on usage errors, 130 on
Ctrl-C or SIGTERM (every server torn down first).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envkit.cli._common import (
    allow_python_override_option,
    backend_option,
    common_options,
    gym_python_option,
    option_group,
    sigterm_as_interrupt,
)
from envkit.model.gym_data import DEFAULT_GYM_VERSION

if TYPE_CHECKING:
    from envkit.probe import ProbeOutcome, ProbeRequest

__all__ = ["FORMATS", "probe_command", "run_probe_request"]

_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
FORMATS = ("human", "json", "github", "sarif")


_static_options = option_group(
    click.option("--dataset", type=_DIR, help="Dataset dir (training.jsonl): the rows."),
    click.option("--job", type=_FILE, help="GRPO job JSON: the concurrency, the reply "
                                           "length and the step the probe projects."),
    click.option("--arch", type=click.Choice(["x86_64", "aarch64"]), default=None,
                 help="Cluster architecture (default: wheels.lock, else x86_64)."),
    click.option("--python", "python_version", default=None,
                 help="Target CPython version (default: wheels.lock, else 3.13)."),
    click.option("--glibc", default=None, metavar="2_N",
                 help="Cluster glibc floor (default: wheels.lock, else 2_28)."),
    click.option("--gym-version", default=None,
                 help=f"nemo-gym version of the image (default {DEFAULT_GYM_VERSION})."),
    click.option("--offline/--no-offline", default=None,
                 help="No route out: index-free installs from wheels/, servers in a "
                      "network namespace with loopback only."),
    click.option("--isolated", is_flag=True, help="Ignore envkit.toml and [tool.envkit]."),
)
"""The static pass's options, spelled and defaulted as ``envkit validate``'s."""


_probe_options = option_group(
    click.option("--oracle-field", default=None, metavar="FIELD",
                 help="Row field with the reference answer (dotted for nested; default: "
                      "expected_answer, answer, ground_truth, expected_output, solution)."),
    click.option("--rows", "probe_rows", type=click.IntRange(min=1), default=None,
                 help="Rows per agent (probe-rows, default 8)."),
    click.option("--repeats", "probe_repeats", type=click.IntRange(min=1), default=None,
                 help="Times each reply is scored per row (probe-repeats, default 2)."),
    click.option("--margin", "probe_margin", type=click.FloatRange(0, 1), default=None,
                 help="Gameable within this share of the reward range (probe-margin, "
                      "default 0.1)."),
    click.option("--rollout-timeout", "probe_rollout_timeout", default=None,
                 type=click.FloatRange(min=1),
                 help="Seconds per rollout (probe-rollout-timeout, default 600)."),
    click.option("--model", type=_DIR, default=None, metavar="DIR",
                 help="Also sample this HF policy's own G replies per prompt (the job's "
                      "num_generations_per_prompt) and report its zero-variance groups "
                      "(needs the `train` extra)."),
    backend_option("model_backend"),
    click.option("--zero-variance-warn", "probe_zero_variance_warn", default=None,
                 type=click.FloatRange(0, 1),
                 help="With --model: warn over this share of zero-variance groups "
                      "(probe-zero-variance-warn, default 0.5)."),
    gym_python_option,
    allow_python_override_option,
    click.option("--timeout", "ready_timeout_s", default=300.0, show_default=True,
                 type=click.FloatRange(min=1), help="Seconds for every server to be ready."),
    click.option("--keep-logs", type=click.Path(file_okay=False, path_type=Path),
                 help="Copy the servers' logs here."),
    click.option("-o", "--output", "output_dir", default=None,
                 type=click.Path(file_okay=False, path_type=Path),
                 help="Write probe.json and probe.png (needs matplotlib) here."),
)
"""The thresholds (default: the configuration's ``probe-*`` keys, else the built-ins)."""


@click.command("probe")
@click.argument("package", type=_DIR)
@_static_options
@_probe_options
@common_options(FORMATS)
def probe_command(package: Path, dataset: Path | None, job: Path | None, arch: str | None,
                  python_version: str | None, glibc: str | None, gym_version: str | None,
                  offline: bool | None, isolated: bool, probe_rows: int | None,
                  probe_repeats: int | None, probe_margin: float | None,
                  probe_rollout_timeout: float | None, probe_zero_variance_warn: float | None,
                  output_dir: Path | None, **runtime: Any) -> ProbeOutcome:
    """Will PACKAGE train? Validate it, bring its real Gym servers up once, and score a panel
    of scripted replies (each row's reference answer; empty, echoed, noisy, format-only and
    injected ones) on the dataset's rows, several times each; then replay the reference at
    rising concurrency up to what the job sends.

    Errors: a content-free reply scoring like the reference (EK801), a reference that never
    scores (EK802), rewards that change between calls (EK803), rows with no learning signal
    (EK804), failures under the job's load (EK805). With --model DIR, the policy's own G
    replies per prompt: groups that all score alike (EK810), dynamic sampling that cannot fill
    a step (EK811). `envkit rule EK8` lists them all.
    """
    from envkit.probe import ProbeRequest
    from envkit.validate.settings import Settings

    if runtime.get("model") is not None:
        from envkit.cli._extras import require_backend, require_extra

        require_extra("probe --model", "train")  # torch and transformers serve the policy
        require_backend("probe --model", str(runtime.get("model_backend", "hf")))

    flags = Settings(arch=arch, python=python_version, glibc=glibc, gym_version=gym_version,
                     offline=offline, dataset=dataset, job=job, probe_rows=probe_rows,
                     probe_repeats=probe_repeats, probe_margin=probe_margin,
                     probe_rollout_timeout=probe_rollout_timeout,
                     probe_zero_variance_warn=probe_zero_variance_warn)
    return run_probe_request(ProbeRequest(package=package, flags=flags, isolated=isolated,
                                          **runtime), output_dir)


def run_probe_request(request: ProbeRequest, output_dir: Path | None = None) -> ProbeOutcome:
    """Run with SIGTERM as Ctrl-C (servers torn down); write ``probe.json`` and the PNG into
    ``output_dir``."""
    from dataclasses import replace

    from envkit.probe import ProbeOutcome, run_probe
    from envkit.probe.phases import RichProgress
    from envkit.probe.write import write_outputs

    with sigterm_as_interrupt():
        report = run_probe(replace(request, progress=RichProgress()))
    if output_dir is not None:
        report = write_outputs(report, output_dir)
    return ProbeOutcome(report, request.package)
