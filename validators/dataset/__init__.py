"""EK5xx: the prompt dataset (``training.jsonl`` / ``validation.jsonl``) as Gym rollout rows.

``rules`` holds the records, ``checks`` the checks over each file's rows, ``context`` what a
pass knows besides the row (the package's agents, task indices seen), ``leaks`` the reference
answer found in the prompt (EK507), ``_responses`` the Responses API input shapes Gym accepts.
Importing this package imports only ``rules``: a validate run without a dataset reads the
codes, not the row checks (``envkit.validators.checks_for`` imports ``checks``).
"""

from __future__ import annotations

from envkit.validators.dataset.rules import RULES

__all__ = ["RULES"]
