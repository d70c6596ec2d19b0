"""Shared test helpers: builders, real-service launchers, and scripts run in subprocesses."""
