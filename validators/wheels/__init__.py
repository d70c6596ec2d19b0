"""EK4xx: is ``wheels/`` installable on the target, and does it cover the installs?

Only a package with a wheelhouse imports ``checks`` (``envkit.validators.checks_for``).
"""
