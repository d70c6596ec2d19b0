"""Converters: verifiers / hub environments to adapter-wheels-v1; Gym server trees to packages."""
