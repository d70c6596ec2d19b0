"""EK6xx: the platform's ``rl`` GRPO job JSON, checked before submit.

``rules`` holds the records, ``checks`` the checks over one job file (names, types, ranges and
refs from the job model), ``cross_field`` the platform's rules between fields.
"""

from __future__ import annotations

from envkit.validators.job.checks import (
    CHECKS,
    REF_FIELDS,
    check_job,
    is_local_ref,
    is_platform_ref,
    is_workspace_ref,
    job_diagnostics,
)
from envkit.validators.job.rules import RULES

__all__ = [
    "CHECKS", "REF_FIELDS", "RULES", "check_job", "is_local_ref", "is_platform_ref",
    "is_workspace_ref", "job_diagnostics",
]
