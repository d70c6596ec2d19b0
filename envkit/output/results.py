"""The typed results CLI commands hand back for ``envkit.output.render``: what a command adds
around an operation's result (the output path it was given, the validation it ran after a
conversion), and the results of the commands that only print text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from envkit.converters.verifiers import ConvertResult
    from envkit.rollout import RolloutSummary
    from envkit.trainer.grpo import TrainResult
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


@dataclass(frozen=True, slots=True)
class RolloutOutcome:
    summary: RolloutSummary
    output: Path | None


@dataclass(frozen=True, slots=True)
class TrainOutcome:
    result: TrainResult


@dataclass(frozen=True, slots=True)
class ConvertOutcome:
    """A conversion and the validation of what it wrote (``result`` is None when the converted
    package failed validation: then nothing was written and ``report`` says why)."""

    result: ConvertResult | None
    report: Report
