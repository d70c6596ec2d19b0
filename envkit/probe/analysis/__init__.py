"""The probe's analyses: pure functions over what the phases observed.

Why a room of their own: every verdict the probe gives is computed here from plain values
(scores, latencies, the declared reward), so it can be tested, and read, without a server.
Nothing here does I/O or imports the phases (an import-linter contract in pyproject.toml).
"""
