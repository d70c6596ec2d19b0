"""envkit.converters (mapped from the top-level converters/ folder)."""
