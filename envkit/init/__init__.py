"""``envkit init``: start a new environment project from a template (``gym``: a NeMo Gym
resources server; ``verifiers``: a classic verifiers environment for ``envkit convert verifiers
--source``)."""

from __future__ import annotations

from envkit.init.project import (
    FORMATS,
    InitNameError,
    InitRequest,
    InitResult,
    init_project,
    project_files,
)
from envkit.init.render import TEMPLATES
from envkit.init.write import InitTargetError

__all__ = ["FORMATS", "TEMPLATES", "InitNameError", "InitRequest", "InitResult",
           "InitTargetError", "init_project", "project_files"]
