"""The JSON shapes the renderers assemble, one versioned ``TypedDict`` each.

Each follows the JSON Schema ``envkit schema NAME`` prints (named in the class docstring).
Bump a shape's version with its schema: the minor version for an added field, the major
version for anything a reader could trip on.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from envkit.validate.report import DiagnosticDict, ReportDict

__all__ = [
    "CompiledConfigDict",
    "ConvertDict",
    "ErrorDict",
    "ErrorInfo",
    "InitDict",
    "RolloutDict",
    "RuleDict",
    "RulesDict",
    "SettingsDict",
    "TrainDict",
]


class ErrorInfo(TypedDict):
    kind: str
    """``usage`` | ``missing-extra`` | ``invalid`` | ``failed`` | ``internal``."""
    type: str
    message: str
    hint: str
    code: str | None


class ErrorDict(TypedDict):
    """``envkit schema error``: what any command prints instead of its result."""

    version: Literal["1.0"]
    valid: Literal[False]
    error: ErrorInfo
    diagnostics: list[DiagnosticDict]


class ConvertDict(ReportDict):
    """``envkit schema convert``: the validation of what was written, and what was written."""

    package: str | None
    dataset: str | None
    training_rows: int
    validation_rows: int
    wheels: int


class RolloutFailure(TypedDict):
    index: int
    agent: str
    failure_reason: str


class _RolloutRequired(TypedDict):
    version: Literal["1.0"]
    rollouts: int
    failed: int
    mean_reward: dict[str, float]
    truncation_rate: float
    ready_s: float
    rollout_s: float
    failures: list[RolloutFailure]
    output: str | None


class RolloutDict(_RolloutRequired, total=False):
    """``envkit schema rollout``. ``aborted`` only when the run stopped early.

    Why a base with ``total=False`` and not ``NotRequired``: under postponed annotations
    (``from __future__ import annotations``) Python 3.11 cannot see ``NotRequired`` and counts
    the key as required."""

    aborted: str


class InitDict(TypedDict):
    """``envkit schema init``: ``envkit init``."""

    version: Literal["1.0"]
    directory: str
    template: str
    name: str
    format: str
    arch: str
    files: list[str]
    next_steps: list[str]


class TrainDict(TypedDict):
    """``envkit schema train``."""

    version: Literal["1.0"]
    steps: int
    final_dir: str
    metrics: str
    final_metrics: dict[str, float | None]


class NotApplied(TypedDict):
    key: str
    here: str


class CompiledConfigDict(TypedDict):
    """``envkit schema train-config``: ``envkit train --print-config``."""

    version: Literal["1.0"]
    train_rows: int
    validation_rows: int
    config: dict[str, Any]
    cannot_apply_here: list[NotApplied]


class SeverityWhen(TypedDict):
    severity: str
    when: str | None
    """When the rule is reported at this severity; ``None``: always."""


class RuleDict(TypedDict):
    code: str
    severity: str
    """The default severity (``envkit rule`` lists it; ``severities`` says when others apply)."""
    severities: list[SeverityWhen]
    title: str
    why: str
    fix: str


class RulesDict(TypedDict):
    """``envkit schema rules``. 1.1 added ``severities``."""

    version: Literal["1.1"]
    rules: list[RuleDict]


class PackageSettings(TypedDict):
    path: str
    settings: dict[str, Any]


class SettingsDict(TypedDict):
    """``envkit schema settings``: ``envkit validate --show-settings``."""

    version: Literal["1.0"]
    packages: list[PackageSettings]
