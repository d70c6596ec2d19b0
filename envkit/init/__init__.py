"""``envkit init``: start a new environment project from a template.

Two templates ship as package data: ``gym``, a NeMo Gym resources server with its config,
verifier fixture, rows, GRPO job and settings (the default), and ``verifiers``, a classic
verifiers environment for ``envkit convert verifiers --source``. Unless ``--no-ci``, the
project also gets a pre-commit configuration and a GitHub Actions workflow.
"""

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
