"""envkit.trainer (mapped from the top-level trainer/ folder)."""
