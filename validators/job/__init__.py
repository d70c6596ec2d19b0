"""EK6xx: the platform's ``rl`` GRPO job JSON, checked before submit.

``rules`` holds the records, ``checks`` the checks over one job file (names, types, ranges and
refs from the job model), ``cross_field`` the platform's rules between fields. Only a run with
a job file imports ``checks`` and the job model (``envkit.validators.checks_for``).
"""
