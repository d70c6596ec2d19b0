"""EK5xx: the prompt dataset (``training.jsonl`` / ``validation.jsonl``) as Gym rollout rows.

Only a run with a dataset imports ``checks`` (``envkit.validators.checks_for``).
"""
