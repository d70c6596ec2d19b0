"""Rollout sources: where the GRPO loop gets scored samples (local, Gym, Ray)."""
