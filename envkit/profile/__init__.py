"""``envkit profile``: which rows of a dataset give GRPO a learning signal with this policy."""

from __future__ import annotations

from envkit.profile.analysis import Band, BandError, RowProfile, parse_band
from envkit.profile.report import ProfileReport
from envkit.profile.run import (
    DATASET_DIR,
    EmptyBandError,
    pass_threshold_for,
    run_profile,
)
from envkit.profile.sampling import ProfileRequest

__all__ = [
    "DATASET_DIR",
    "Band",
    "BandError",
    "EmptyBandError",
    "ProfileReport",
    "ProfileRequest",
    "RowProfile",
    "parse_band",
    "pass_threshold_for",
    "run_profile",
]
