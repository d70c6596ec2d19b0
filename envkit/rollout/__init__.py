"""``envkit rollout``: a package's real Gym servers against a local policy, rows to rewards.

Above the trainer: it borrows its engines and Gym source, but is no part of the GRPO loop.
"""

from __future__ import annotations

from envkit.rollout.run import RolloutRequest, RolloutSummary, rollout_package, run_rollouts

__all__ = ["RolloutRequest", "RolloutSummary", "rollout_package", "run_rollouts"]
