"""Placeholder: filled in by its issue."""

from __future__ import annotations

CHECKS: tuple = ()
RULES: tuple = ()
