"""EK5xx: the prompt dataset (``training.jsonl`` / ``validation.jsonl``) as Gym rollout rows.

``rules`` holds the records, ``checks`` the checks over each file's rows, ``context`` what a
pass knows besides the row (the package's agents, task indices seen), ``leaks`` the reference
answer found in the prompt (EK507), ``_responses`` the Responses API input shapes Gym accepts.
Only a run with a dataset imports ``checks`` (``envkit.validators.checks_for``).
"""
