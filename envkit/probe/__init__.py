"""``envkit probe``: will this package train? Reward integrity, learning signal and load.

Static validation first; then the package's real Gym servers, brought up once as ``envkit
smoke`` does (offline in a namespace under ``--offline``), driven by a panel of scripted
policies (the rows' reference answer and content-free replies, ``policies``) at low
concurrency, then the reference replayed at rising concurrency up to the job's. Every finding
is a diagnostic with an EK8xx code (``envkit rule EK801``). The names below are its face.

Two rooms, by whether a module talks to a server: ``phases/`` drive the running servers
(``phases.session`` is the one module that touches the Gym runtime); ``analysis/`` holds the
pure functions over what they observed, no I/O (causes before consequences in ``verdicts``).
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
