"""envkit.trainer: GRPO against packaged NeMo Gym servers (top-level trainer/ folder)."""
