"""Every random draw of a run, derived from the job's ``seed``: a run is a function of its inputs.

Why derived and not drawn: rollouts reach the policy server as concurrent HTTP requests, in an
order no one controls; a shared generator would hand each request whatever draws were left
when it arrived. Each sample's seed is instead a hash of ``(seed, step, salt)`` and of the
sample's place in the step (its prompt group and its index in the group), so the same job, seed
and data sample the same tokens in any arrival order, after a resume, and on a retried batch.
"""

from __future__ import annotations

import hashlib

__all__ = ["SALT_GENERATION", "SALT_VALIDATION", "sample_seed", "step_seed"]

SALT_GENERATION = 0
"""A step's training rollouts (and torch's own draws in the step)."""
SALT_VALIDATION = 1
"""The validation rollouts after a step."""

_MASK = 2**63 - 1  # a non-negative int64: what vLLM and torch generators accept


def _mix(*parts: int) -> int:
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & _MASK


def step_seed(seed: int, step: int, salt: int = SALT_GENERATION) -> int:
    """The seed of one step's draws (``salt`` tells generation from validation).

    >>> step_seed(42, 3) == step_seed(42, 3), step_seed(42, 3) == step_seed(42, 4)
    (True, False)
    """
    return _mix(seed, step, salt)


def sample_seed(batch_seed: int, group: int, sample: int) -> int:
    """The seed of sample ``sample`` of prompt group ``group`` in a batch seeded ``batch_seed``.

    >>> sample_seed(7, 0, 1) != sample_seed(7, 1, 0)
    True
    """
    return _mix(batch_seed, group, sample)
