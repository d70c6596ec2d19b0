"""What every check shares: the rule record, the inputs, and the check signature.

A check is a plain function ``check_x(inputs) -> Iterator[Diagnostic]``. It reads only the
models in ``Inputs`` (read once by ``envkit.model.package`` / ``envkit.model.dataset`` /
``envkit.model.jobfile``), never the disk, never the network, and never raises over a defect: it
yields diagnostics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envkit.model.diagnostics import Diagnostic, Severity, close_matches
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.model.target import Target

if TYPE_CHECKING:
    from envkit.model.dataset import Dataset
    from envkit.model.jobfile import JobDoc
    from envkit.model.package import Package
    from envkit.model.yamlio import YamlDoc

__all__ = ["Check", "CheckOptions", "Inputs", "Rule", "closest", "did_you_mean", "json_kind",
           "yaml_line", "yaml_type"]


@dataclass(frozen=True, slots=True)
class Rule:
    """A stable rule code with the texts ``envkit rule CODE`` prints (laid out as ruff's)."""

    code: str
    severity: Severity
    """The severity it is reported at unless ``when`` says otherwise."""
    title: str
    why: str
    fix: str
    when: tuple[tuple[Severity, str], ...] = ()
    """For a rule whose severity depends on the input: each severity and the condition it
    applies under, as a phrase that follows the severity's name (the offline-install rule:
    ``(ERROR, "with `--offline`: ..."), (WARNING, "otherwise: ...")``). Empty: always
    ``severity``."""

    def __post_init__(self) -> None:
        if self.when and self.severity not in {severity for severity, _ in self.when}:
            msg = f"{self.code}: `when` must say when its default {self.severity.value} applies"
            raise ValueError(msg)

    @property
    def severities(self) -> tuple[tuple[Severity, str | None], ...]:
        """Every severity the rule is reported at and when (``None``: always)."""
        return self.when or ((self.severity, None),)

    def at(
        self,
        path: str,
        message: str,
        *,
        line: int | None = None,
        hint: str | None = None,
        severity: Severity | None = None,
        column: int | None = None,
    ) -> Diagnostic:
        return Diagnostic(
            self.code, severity or self.severity, path, line, message, hint or self.fix, column
        )


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """How a run checks: the target it judges wheels for, the Gym version it holds configs to,
    and whether it may reach the network or accept local job refs."""

    target: Target = field(default_factory=Target)
    gym_version: str = DEFAULT_GYM_VERSION
    offline: bool = False
    allow_local_refs: bool = False
    """Job refs may be local paths (a local trainer run); submit needs `workspace/name` (EK608)."""
    leak_min_chars: int = 4
    """``leak-min-chars``: the shortest reference answer EK507 looks for in the prompt (a
short one, "4" or "B", turns up in prompts by chance)."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """What one validate run looks at; any of the three may be absent."""

    package: Package | None = None
    dataset: Dataset | None = None
    job: JobDoc | None = None
    options: CheckOptions = field(default_factory=CheckOptions)


Check = Callable[[Inputs], Iterable[Diagnostic]]


def yaml_line(doc: YamlDoc | None, *keypath: str | int) -> int | None:
    """The line of ``keypath`` in ``doc``; None when the value was not read from a file."""
    return doc.line_of(*keypath) if doc is not None else None


def yaml_type(value: object) -> str:
    """The YAML name of a parsed value's type, for messages written for the file's author."""
    names = {dict: "mapping", list: "list", str: "string", bool: "boolean", int: "integer",
             float: "number", type(None): "null"}
    return next((n for t, n in names.items() if isinstance(value, t)), type(value).__name__)


def json_kind(value: object) -> str:
    """The JSON name of a parsed value's type, with its article ("an object", "null")."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             type(None): "null"}
    number = isinstance(value, int | float)
    return names.get(type(value), "a number" if number else type(value).__name__)


def closest(name: str, known: Iterable[str]) -> str | None:
    """The did-you-mean of a misspelt name: the known one at difflib ratio >= 0.8, as build's
    ``_find_typo``."""
    match = close_matches(name, sorted(known), n=1, cutoff=0.8)
    return match[0] if match else None


def did_you_mean(name: str, known: Iterable[str], *within: str) -> str | None:
    """The hint for a misspelt name (``closest``), shown at its key path ``within``."""
    match = closest(name, known)
    return f"Did you mean `{'.'.join((*within, match))}`?" if match else None
