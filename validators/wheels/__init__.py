"""EK4xx: is ``wheels/`` installable on the target, and does it cover the installs?

``rules`` holds the records, ``checks`` the checks over the package's wheels and the closure,
``_words`` a wheel's filename tags in words (EK401's message).
"""

from __future__ import annotations

from envkit.validators.wheels.checks import CHECKS, closure_roots
from envkit.validators.wheels.rules import RULES

__all__ = ["CHECKS", "RULES", "closure_roots"]
