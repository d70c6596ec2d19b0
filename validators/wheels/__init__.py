"""EK4xx: is ``wheels/`` installable on the target, and does it cover the installs?

``rules`` holds the records, ``checks`` the checks over the package's wheels and the closure,
``_words`` a wheel's filename tags in words (EK401's message). Importing this package imports
only ``rules``: a package without a wheelhouse is validated without the wheel checks
(``envkit.validators.checks_for`` imports ``checks``).
"""

from __future__ import annotations

from envkit.validators.wheels.rules import RULES

__all__ = ["RULES"]
