"""EK6xx: the platform's ``rl`` GRPO job JSON, checked before submit.

Only a run with a job file imports ``checks`` and the job model (``envkit.validators.checks_for``).
"""
