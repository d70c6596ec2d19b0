"""``envkit smoke``: prove a package's servers start and score before upload.

Static validation first (``envkit validate``'s gate); then every server brought up as the
training image does through a ``GymSession``, a scripted policy endpoint (no model) and N rows
per agent, each of which must return a numeric reward. Failures are ordinary diagnostics
(EK7xx, or the static rule whose defect it is) with the server's log tail as evidence.
"""

from __future__ import annotations

from envkit.smoke.report import (
    SMOKE_VERSION,
    AgentResult,
    ServerResult,
    SmokeFinding,
    SmokeOutcome,
    SmokeReport,
)
from envkit.smoke.run import SmokeRequest, run_smoke

__all__ = [
    "SMOKE_VERSION",
    "AgentResult",
    "ServerResult",
    "SmokeFinding",
    "SmokeOutcome",
    "SmokeReport",
    "SmokeRequest",
    "run_smoke",
]
