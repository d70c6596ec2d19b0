"""The typed results CLI commands hand back to ``envkit.cli.main`` for ``envkit.output.render``.

Results from the operations themselves (``ValidationRun``, a probe's or smoke's outcome) are
rendered as they are; these wrap what a command adds around an operation's result (the output
path it was given, the validation it ran after a conversion) and the two commands that only
print text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.validate.report import Report
    from envkit.validators import Rule

__all__ = [
    "CompiledConfig",
    "ConvertOutcome",
    "RolloutOutcome",
    "RuleDocs",
    "SchemaText",
    "SettingsView",
    "TrainOutcome",
]


@dataclass(frozen=True, slots=True)
class CompiledConfig:
    """``envkit train --print-config``: the NeMo-RL config the job compiles to as envkit runs
    it, and the fields that cannot apply on this machine (YAML for people, JSON for tools)."""

    report: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SchemaText:
    name: str
    text: str


@dataclass(frozen=True, slots=True)
class RuleDocs:
    rules: tuple[Rule, ...]
    detail: bool
    """One rule's full text (``envkit rule EK105``) rather than the one-line list."""


@dataclass(frozen=True, slots=True)
class SettingsView:
    """``envkit validate --show-settings``: each package and the settings it resolves to."""

    packages: tuple[tuple[str, Mapping[str, Any]], ...]


class _Summary(Protocol):
    @property
    def mean_reward(self) -> Mapping[str, float]: ...

    @property
    def ready_s(self) -> float: ...

    @property
    def rollout_s(self) -> float: ...

    @property
    def aborted(self) -> str | None: ...

    @property
    def results(self) -> Sequence[Any]: ...

    @property
    def failed(self) -> Sequence[Any]: ...

    @property
    def exit_code(self) -> int: ...

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class RolloutOutcome:
    summary: _Summary
    output: Path | None


class _Trained(Protocol):
    steps: int
    final_dir: Path
    metrics_path: Path
    final_metrics: dict[str, float]


@dataclass(frozen=True, slots=True)
class TrainOutcome:
    result: _Trained


class _Converted(Protocol):
    @property
    def package(self) -> Path: ...

    @property
    def dataset(self) -> Path: ...

    @property
    def training_rows(self) -> int: ...

    @property
    def validation_rows(self) -> int: ...

    @property
    def wheels(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class ConvertOutcome:
    """A conversion and the validation of what it wrote (``result`` is None when the converted
    package failed validation: then nothing was written and ``report`` says why)."""

    result: _Converted | None
    report: Report
