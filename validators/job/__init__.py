"""EK6xx: the platform's ``rl`` GRPO job JSON, checked before submit.

``rules`` holds the records, ``checks`` the checks over one job file (names, types, ranges and
refs from the job model), ``cross_field`` the platform's rules between fields. Importing this
package imports only ``rules``: a validate run without a job file reads the codes, not the
job model (``envkit.validators.checks_for`` imports ``checks``).
"""

from __future__ import annotations

from envkit.validators.job.rules import RULES

__all__ = ["RULES"]
