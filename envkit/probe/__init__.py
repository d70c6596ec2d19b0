"""``envkit probe``: will this package train? Reward integrity, learning signal and load.

Static validation first; then the package's real Gym servers, brought up once as ``envkit
smoke`` does, driven by a panel of scripted policies, then the reference replayed at rising
concurrency up to the job's. Every finding is an EK8xx diagnostic. ``phases/`` drive the
running servers; ``analysis/`` holds the pure functions over what they observed.
"""

from __future__ import annotations

from envkit.probe.phases import Phase, PhaseResult, ProbeContext
from envkit.probe.report import PROBE_VERSION, ProbeOutcome, ProbeReport
from envkit.probe.run import PHASES, ProbeRequest, ProbeUsageError, run_probe
from envkit.probe.thresholds import ThresholdError, Thresholds

__all__ = [
    "PHASES",
    "PROBE_VERSION",
    "Phase",
    "PhaseResult",
    "ProbeContext",
    "ProbeOutcome",
    "ProbeReport",
    "ProbeRequest",
    "ProbeUsageError",
    "ThresholdError",
    "Thresholds",
    "run_probe",
]
