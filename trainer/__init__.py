"""envkit.trainer: GRPO against packaged NeMo Gym servers (mapped from the top-level trainer/ folder)."""
