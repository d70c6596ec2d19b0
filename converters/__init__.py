"""Converters: verifiers / Prime hub environments and Gym trees into environment packages."""
