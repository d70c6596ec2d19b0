"""What a failing Gym run writes to its logs, mapped to the EK rule that catches it statically.

Why here: the rules live in ``validators/``; when ``envkit rollout`` or ``envkit train`` brings
a package up and a server fails anyway, the runtime (``envkit.gym.diagnose``) names the rule a
``envkit validate`` run would have reported, so a grep for a code lands next to its rule. Each
entry is ``(code, log pattern, one-line reason)``; the first match wins, so entries go from
specific to generic (a missing module is EK403 only when nothing more specific matched).
Pure data: no I/O, no imports beyond the standard library.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["RUNTIME_SIGNATURES", "Signature"]


class Signature(NamedTuple):
    code: str | None
    """The EK rule, or None for a host problem no package rule covers."""
    pattern: str
    """A regular expression searched in the failing server's log."""
    reason: str


RUNTIME_SIGNATURES: tuple[Signature, ...] = (
    Signature("EK302", r"AlmostServerError|almost-server",
              "a server block failed Gym's validation (domain, datasets[]): see EK302/EK315"),
    Signature("EK304", r"ServerRefNotFoundError|Available responses_api_models: \(none\)",
              "a ref names an instance no config defines (EK304/EK305)"),
    Signature("EK205", r"Missing pyproject\.toml or requirements\.txt|Found both pyproject\.toml "
              r"and requirements",
              "a server dir needs exactly one of requirements.txt / pyproject.toml"),
    Signature("EK401", r"has no wheels with a matching platform tag",
              "a wheel in wheels/ does not match this platform"),
    Signature("EK403", r"not found in the provided package locations|no version of|was not found "
              r"in the package registry|network connectivity is disabled|Because .* (?:was not "
              r"found|unsatisfiable)",
              "a requirement is not satisfied by wheels/ (or the index)"),
    Signature("EK406", r"[Rr]equires-[Pp]ython|current Python version .* does not satisfy",
              "a requirement excludes this Python (nemo-gym's 3.13.14 floor: "
              "--allow-python-override)"),
    Signature("EK313", r"InterpolationKeyError|ConfigInterpolationError|MissingMandatoryValue|"
              r"is not set after merging",
              "a config interpolation cannot be resolved"),
    Signature("EK403", r"ModuleNotFoundError|ImportError",
              "a server imports a module its venv does not have"),
    Signature(None, r"command not found", "a tool Gym shells out to is missing from PATH"),
    Signature("EK310", r"can't open file|No such file or directory: .*\.py",
              "a server's entrypoint file is missing"),
)
