"""Where the repository's parts are, for tests at any depth under ``tests/``."""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIXTURES", "REPO_ROOT", "SUPPORT"]

SUPPORT = Path(__file__).resolve().parent
REPO_ROOT = SUPPORT.parent.parent
FIXTURES = REPO_ROOT / "fixtures"
