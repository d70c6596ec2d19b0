"""EK4xx: is ``wheels/`` installable on the target, and does it cover the installs?

``rules`` holds the records, ``checks`` the checks over the package's wheels and the closure.
Only a package with a wheelhouse imports ``checks`` (``envkit.validators.checks_for``).
"""
