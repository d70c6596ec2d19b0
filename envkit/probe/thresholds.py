"""The probe's thresholds: each a key of ``envkit.toml`` / ``[tool.envkit]`` (``probe-margin``
...), most also flags of ``envkit probe``; a flag wins over the file, the file over defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

from envkit.errors import UsageError
from envkit.validate.settings import PROBE_DEFAULTS

if TYPE_CHECKING:
    from envkit.validate.settings import Settings

__all__ = ["LOAD_ROUNDS", "PATIENCE", "PATIENCE_FLOOR_S", "ThresholdError", "Thresholds"]

LOAD_ROUNDS = 3
"""Requests per in-flight slot at each load level: a level of concurrency c sends 3c
rollouts with c in flight, so even level 1 has a p50 of three samples."""


PATIENCE = 2.0
PATIENCE_FLOOR_S = 60.0
"""Why the probe waits longer than ``probe-rollout-timeout`` (``Thresholds.patience_s``): a
slow rollout is the EK806 warning, measured on its latency; only one that does not answer at
all is a failure. The floor keeps a busy machine's scheduling delay from becoming failures."""


class ThresholdError(UsageError, ValueError):
    """A threshold outside its range (a usage error)."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    margin: float = float(PROBE_DEFAULTS["probe-margin"])
    """``probe-margin``: a content-free reply whose mean reward comes within this fraction of
    the reward range of the reference answer's is gameable (EK801)."""
    repeats: int = int(PROBE_DEFAULTS["probe-repeats"])
    """``probe-repeats``: times each (reply, row) is scored; two suffice to catch an
    unseeded random reward, each more one costs a full panel pass (EK803)."""
    rows: int = int(PROBE_DEFAULTS["probe-rows"])
    """``probe-rows``: rows per agent."""
    dead_rows_warn: float = float(PROBE_DEFAULTS["probe-dead-rows-warn"])
    """``probe-dead-rows-warn``: warn when more than this share of rows gives every reply the
    same reward; 100% is an error (EK804)."""
    zero_variance_warn: float = float(PROBE_DEFAULTS["probe-zero-variance-warn"])
    """``probe-zero-variance-warn`` (with ``--model``): warn when more than this share of the
    policy's groups (G replies to one prompt) all get the same reward; 100% is an error
    (EK810)."""
    concurrency: int = int(PROBE_DEFAULTS["probe-concurrency"])
    """``probe-concurrency``: rollouts in flight while scoring the panel. Low on purpose: a
    server that breaks under load is the load check's finding (EK805), not a bad reward."""
    rollout_timeout_s: float = float(PROBE_DEFAULTS["probe-rollout-timeout"])
    """``probe-rollout-timeout``: ``envkit train``'s per-row timeout; p99 over it at the job's
    concurrency warns (EK806)."""

    @property
    def patience_s(self) -> float:
        """How long the probe waits for one rollout.

        >>> Thresholds(rollout_timeout_s=600).patience_s, Thresholds(rollout_timeout_s=1).patience_s
        (1200.0, 61.0)
        """
        return max(self.rollout_timeout_s * PATIENCE, self.rollout_timeout_s + PATIENCE_FLOOR_S)

    def check(self) -> Thresholds:
        """:raises ThresholdError: a value outside its range."""
        problems = [f"{_key(name)} must be in [0, 1], not {getattr(self, name)!r}"
                    for name in ("margin", "dead_rows_warn", "zero_variance_warn")
                    if not 0.0 <= getattr(self, name) <= 1.0]
        problems += [f"{_key(name)} must be at least 1, not {getattr(self, name)!r}"
                     for name in ("repeats", "rows", "concurrency") if getattr(self, name) < 1]
        if self.rollout_timeout_s <= 0:
            problems.append("probe-rollout-timeout must be positive")
        if problems:
            raise ThresholdError("; ".join(problems))
        return self

    def over(self, settings: Settings) -> Thresholds:
        """These defaults, replaced by what ``settings`` (file + flags) set."""
        values = {f.name: getattr(settings, _key(f.name).replace("-", "_")) for f in fields(self)}
        return replace(self, **{k: v for k, v in values.items() if v is not None}).check()


def _key(name: str) -> str:
    """The setting a field is read from.

    >>> _key("rollout_timeout_s")
    'probe-rollout-timeout'
    """
    return "probe-" + name.removesuffix("_s").replace("_", "-")
