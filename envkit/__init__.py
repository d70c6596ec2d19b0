"""envkit: build, validate and convert NeMo Gym environment packages, and train on them."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
