"""The probe's analyses: pure functions over what the phases observed.

Why a room of their own: every verdict is computed here from plain values, so it can be
tested, and read, without a server (an import-linter contract keeps the phases out).
"""
