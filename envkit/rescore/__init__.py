"""``envkit rescore``: a recorded run's rollouts scored again by the package's current
verifier, without a policy (``run``), and what it found (``report``); which servers can be
asked again at all is ``state``'s to say."""

from __future__ import annotations

from envkit.rescore.report import RescoreReport, RowScore
from envkit.rescore.run import RescoreRequest, rescore

__all__ = ["RescoreReport", "RescoreRequest", "RowScore", "rescore"]
