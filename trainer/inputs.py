"""What ``envkit train`` reads, read once: the job, the package and the dataset, validated
together, then handed to the run as they were read.

Why one reader: the job, the package and each dataset file are read once, and
``validate_inputs`` checks those same objects, so the rows that train here are the rows
``envkit validate --dataset`` accepted. The job's ``model``/``dataset``/``environment`` are
``workspace/name`` refs on the platform; locally an existing path may stand in for each, or the
``--model/--dataset/--env`` options override them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.errors import InvalidError
from envkit.gym import RuntimeOptions
from envkit.model.dataset import Dataset, Row, load_dataset
from envkit.model.diagnostics import Severity

if TYPE_CHECKING:
    from collections.abc import Iterator

    from envkit.model.diagnostics import Diagnostic
    from envkit.trainer.config import GrpoConfig
    from envkit.validators import Inputs

__all__ = [
    "LocalInputs",
    "ReadDataset",
    "TrainInputError",
    "TrainInputs",
    "TrainRequest",
    "read_dataset",
    "read_inputs",
    "resolve_inputs",
]

_REF_OPTIONS = {"environment": "env", "dataset": "dataset", "model": "model"}
"""The job's refs, each with the option (and ``TrainRequest`` field) that overrides it."""


class TrainInputError(InvalidError, ValueError):
    """The job cannot start: a missing input or validation errors (listed in ``diagnostics``)."""

    def __init__(self, message: str, diagnostics: list[Diagnostic] | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class LocalInputs:
    """The local directories that stand in for the job's three refs."""

    environment: Path
    dataset: Path
    model: Path


@dataclass(frozen=True, slots=True)
class TrainInputs:
    """Everything a run starts from, read once and validated."""

    paths: LocalInputs
    config: GrpoConfig
    train_rows: list[dict[str, Any]]
    val_rows: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ReadDataset(Dataset):
    """A dataset whose rows were read once and are kept: the validator streams them from
    memory, and the run trains on the same rows (a run holds its rows in memory anyway)."""

    read: Mapping[str, tuple[Row, ...]] = field(default_factory=dict)

    def iter_rows(self, name: str) -> Iterator[Row]:
        return iter(self.read.get(name, ()))


def read_dataset(root: Path) -> ReadDataset:
    """Look at the directory (``load_dataset``) and read each of its files once.

    :raises NotADirectoryError: ``root`` is not a directory.
    """
    model = load_dataset(root)
    rows = {name: tuple(model.iter_rows(name)) for name in model.files}
    return ReadDataset(model.root, model.files, model.read_errors, rows)


def _local(job_data: Mapping[str, Any], key: str, override: Path | None) -> Path | None:
    if override is not None:
        return override
    value = job_data.get(key)
    if isinstance(value, str) and Path(value).exists():
        return Path(value)
    return None


def resolve_inputs(job_data: Mapping[str, Any], request: TrainRequest) -> LocalInputs:
    """Local directories for environment, dataset and model.

    :raises TrainInputError: a ref that is neither overridden nor an existing local path.
    """
    found = {key: _local(job_data, key, getattr(request, opt)) for key, opt in _REF_OPTIONS.items()}
    env, data, model = found.values()
    if env is None or data is None or model is None:
        hints = ", ".join(f"`{k}` (--{_REF_OPTIONS[k]})" for k, v in found.items() if v is None)
        msg = (
            f"no local directory for {hints}: a `workspace/name` ref only resolves on the "
            "platform; pass the option or put a local path in the job"
        )
        raise TrainInputError(msg)
    return LocalInputs(env, data, model)


def _raise_on_errors(inputs: Inputs) -> None:
    """Validate what was read; EK608 is excused (refs replaced by local paths)."""
    from envkit.validate.validate import validate_inputs
    from envkit.validators.job.rules import EK608

    errors = [d for d in validate_inputs(inputs).diagnostics
              if d.severity is Severity.ERROR and d.code != EK608.code]
    if errors:
        msg = f"{len(errors)} validation error(s); fix them before training"
        raise TrainInputError(msg, errors)


def _rows(dataset: Dataset, name: str) -> list[dict[str, Any]]:
    """The rows of a validated file (EK501 already refused any line that is not an object)."""
    if name not in dataset.files:
        return []
    return [row.data for row in dataset.iter_rows(name) if isinstance(row.data, dict)]


def read_inputs(request: TrainRequest) -> TrainInputs:
    """Read the job, package and dataset once, validate them together, build the run config.

    :raises TrainInputError: an input is missing, unreadable or invalid (with diagnostics).
    """
    from envkit.model.jobfile import load_job
    from envkit.trainer.config import GrpoConfig
    from envkit.validate.validate import read_package
    from envkit.validators import CheckOptions, Inputs

    options = CheckOptions(allow_local_refs=True)
    try:  # the validator's own bounded reader (size, FIFOs, huge numbers)
        doc = load_job(request.job)
    except FileNotFoundError:
        msg = f"{request.job}: no such job file"
        raise TrainInputError(msg) from None
    if not isinstance(doc.data, dict):  # EK611: nothing to resolve the refs from
        _raise_on_errors(Inputs(job=doc, options=options))
        msg = f"{request.job}: the job must be a JSON object"
        raise TrainInputError(msg)
    paths = resolve_inputs(doc.data, request)
    try:
        dataset = read_dataset(paths.dataset)
    except NotADirectoryError as exc:
        raise TrainInputError(str(exc)) from None
    _raise_on_errors(Inputs(read_package(paths.environment), dataset, doc, options))
    settings, _ = doc.typed
    if settings is None:  # unreachable once validation passed: the model's errors are EK6xx
        msg = f"{request.job}: the job does not read into the job model"
        raise TrainInputError(msg)
    return TrainInputs(
        paths,
        GrpoConfig(settings.training),
        _rows(dataset, "training.jsonl"),
        _rows(dataset, "validation.jsonl"),
    )
