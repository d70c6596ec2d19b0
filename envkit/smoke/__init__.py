"""``envkit smoke``: prove a package's servers start and score before upload.

Static validation first, then every server brought up as the training image does against a
scripted policy (no model), N rows per agent each returning a numeric reward. Failures are
ordinary diagnostics with the server's log tail as evidence.
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
