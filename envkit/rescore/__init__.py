"""``envkit rescore``: a recorded run's rollouts scored again by the package's current
verifier, without a policy."""

from __future__ import annotations

from envkit.rescore.report import RescoreReport, RowScore
from envkit.rescore.run import RescoreRequest, rescore

__all__ = ["RescoreReport", "RescoreRequest", "RowScore", "rescore"]
