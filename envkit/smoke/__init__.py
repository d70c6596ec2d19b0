"""``envkit smoke``: prove a package's servers start and score before upload.

Static validation first; then every server brought up as the training image does, a scripted
policy endpoint (no model) and N rows per agent, each of which must return a numeric reward.
"""

from __future__ import annotations

from envkit.smoke.report import (
    SMOKE_VERSION,
    AgentResult,
    Failure,
    ServerResult,
    SmokeOutcome,
    SmokeReport,
)
from envkit.smoke.run import SmokeRequest, run_smoke

__all__ = [
    "SMOKE_VERSION",
    "AgentResult",
    "Failure",
    "ServerResult",
    "SmokeOutcome",
    "SmokeReport",
    "SmokeRequest",
    "run_smoke",
]
