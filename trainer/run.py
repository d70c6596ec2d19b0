"""``envkit train`` as one call: resolve inputs, validate, bring Gym up, run GRPO.

Why here and not in the CLI: the command only parses and renders (STYLE "a thin click layer");
tests call :func:`run_training` directly. The job's ``model``/``dataset``/``environment`` are
``workspace/name`` refs on the platform; locally an existing path may stand in for each, or the
``--model/--dataset/--env`` options override them. The job is validated first, exactly as
``envkit validate --job`` would (EK6xx), plus the package and dataset, so the file that trains
here is the file that submits.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.errors import InvalidError
from envkit.gym import RuntimeOptions
from envkit.model.diagnostics import Severity

if TYPE_CHECKING:
    from envkit.model.diagnostics import Diagnostic
    from envkit.trainer.config import GrpoConfig
    from envkit.trainer.grpo import TrainResult
    from envkit.trainer.policy import Policy

__all__ = ["TrainInputError", "TrainRequest", "preflight", "resolve_inputs", "run_training"]

log = logging.getLogger(__name__)

_REF_KEYS = ("environment", "dataset", "model")


class TrainInputError(InvalidError, ValueError):
    """The job cannot start: a missing input or validation errors (listed in ``diagnostics``)."""

    def __init__(self, message: str, diagnostics: list[Diagnostic] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


@dataclass(frozen=True)
class TrainRequest:
    job: Path
    output: Path
    env: Path | None = None
    dataset: Path | None = None
    model: Path | None = None
    resume: bool = False
    ray_address: str | None = None
    use_ray: bool = False
    ray_rollout_resource: str | None = None
    """A custom Ray resource the rollout actor asks 1 unit of (pins it to labelled nodes)."""
    ray_trainer_resource: str | None = None
    save_period: int = 10
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)
    backend: str = "hf"


def _local(job_data: dict[str, Any], key: str, override: Path | None) -> Path | None:
    if override is not None:
        return override
    value = job_data.get(key)
    if isinstance(value, str) and Path(value).exists():
        return Path(value)
    return None


def resolve_inputs(job_data: dict[str, Any], request: TrainRequest) -> dict[str, Path]:
    """Local directories for environment, dataset and model.

    :raises TrainInputError: a ref that is neither overridden nor an existing local path.
    """
    found = {key: _local(job_data, key, getattr(request, _option(key))) for key in _REF_KEYS}
    missing = [k for k, v in found.items() if v is None]
    if missing:
        hints = ", ".join(f"`{k}` (--{_option(k)})" for k in missing)
        msg = (
            f"no local directory for {hints}: a `workspace/name` ref only resolves on the "
            "platform; pass the option or put a local path in the job"
        )
        raise TrainInputError(msg)
    return {k: v for k, v in found.items() if v is not None}


def _option(key: str) -> str:
    return {"environment": "env"}.get(key, key)


def preflight(request: TrainRequest, inputs: dict[str, Path]) -> list[Diagnostic]:
    """Errors from validating job, package and dataset; EK608 is excused for local paths."""
    from envkit.check.validate import ValidateRequest, validate

    report = validate(
        ValidateRequest(package=inputs["environment"], dataset=inputs["dataset"], job=request.job)
    )
    return [d for d in report.diagnostics if d.severity is Severity.ERROR and d.code != "EK608"]


def _load_job(path: Path) -> dict[str, Any]:
    """The job through the validator's own bounded reader (size, FIFOs, huge numbers)."""
    from envkit.model.jobfile import load_job

    try:
        doc = load_job(path)
    except FileNotFoundError:
        msg = f"{path}: no such job file"
        raise TrainInputError(msg) from None
    if doc.error is not None:
        msg = f"{path}: cannot read the job JSON ({doc.error})"
        raise TrainInputError(msg)
    if not isinstance(doc.data, dict):
        msg = f"{path}: the job must be a JSON object"
        raise TrainInputError(msg)
    return doc.data


def _rows(dataset: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from envkit.gym import load_rows
    from envkit.model.dataset import load_dataset

    train_rows = load_rows(dataset, "training")
    has_val = "validation.jsonl" in load_dataset(dataset).files
    return train_rows, load_rows(dataset, "validation") if has_val else []


def run_training(request: TrainRequest) -> TrainResult:
    """Validate, then train through the package's Gym servers; returns the run's result.

    :raises TrainInputError: inputs missing, unreadable, or invalid (with diagnostics).
    """
    from envkit.trainer.config import ConfigError, grpo_config

    _refuse_previous_run(request)
    job_data = _load_job(request.job)
    inputs = resolve_inputs(job_data, request)
    errors = preflight(request, inputs)
    if errors:
        msg = f"{len(errors)} validation error(s); fix them before training"
        raise TrainInputError(msg, errors)
    try:
        cfg = grpo_config(job_data)
    except ConfigError as exc:
        raise TrainInputError(str(exc)) from None
    train_rows, val_rows = _rows(inputs["dataset"])
    if request.use_ray or request.ray_address:
        from envkit.trainer.ray_run import train_on_ray

        return train_on_ray(cfg, request, inputs, train_rows, val_rows)
    return _train_local(cfg, request, inputs, train_rows, val_rows)


def _refuse_previous_run(request: TrainRequest) -> None:
    """A fresh run never writes over another run's metrics and checkpoints.

    Why: mixing them would give a curve with the old run's step 0 and a ``--resume`` that
    continues the wrong run's checkpoint. Only ``--resume`` may reuse the directory.
    """
    if request.resume:
        return
    out = request.output
    ckpts = out / "checkpoints"
    previous = (out / "metrics.jsonl").is_file() or (
        ckpts.is_dir() and any(ckpts.glob("step_*"))
    )
    if previous:
        msg = (
            f"{out} holds a previous run (metrics.jsonl / checkpoints/): pass --resume to "
            "continue it, or choose another -o (or delete it) to start over"
        )
        raise TrainInputError(msg)


def _load(model_dir: Path, cfg: GrpoConfig) -> Policy:
    from envkit.trainer.policy import load_policy

    try:
        return load_policy(model_dir, cfg)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = f"cannot load a causal LM and tokenizer from {model_dir}: {first}"
        raise TrainInputError(msg) from None


def _train_local(
    cfg: GrpoConfig, request: TrainRequest, inputs: dict[str, Path], rows: list, val_rows: list
) -> TrainResult:
    from envkit.trainer.grpo import TrainOptions, train
    from envkit.trainer.sources.gym import GymRolloutSource, gym_source_options

    policy = _load(inputs["model"], cfg)
    opts = gym_source_options(cfg, request.backend, request.runtime)
    with GymRolloutSource(inputs["environment"], inputs["model"], opts) as source:
        source.refresh(policy)
        train_opts = TrainOptions(
            request.output, resume=request.resume, save_period=request.save_period
        )
        return train(cfg, policy, source, rows, train_opts, val_rows=val_rows)
