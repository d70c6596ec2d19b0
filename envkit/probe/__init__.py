"""``envkit probe``: will this package train? Reward integrity, learning signal and load.

Static validation first; then the package's real Gym servers, brought up once as ``envkit
smoke`` does (offline in a namespace under ``--offline``), driven by a panel of scripted
policies (the rows' reference answer and content-free replies, ``policies``) at low
concurrency, then the reference replayed at rising concurrency up to the job's. The analyses
are pure functions over what was observed (``integrity``, ``determinism``, ``learning``,
``load``; causes before consequences in ``verdicts``); every finding is a diagnostic with an
EK8xx code (``envkit rule EK801``). The names below are its face.

Modules: ``policies`` (the panel), ``observations`` (rows, rewards, the reward scale),
``integrity``, ``determinism``, ``learning``, ``load``, ``verdicts``, ``declared`` (what the
package declares about its reward), ``job``, ``thresholds``, ``inputs`` (rows, job, manifests,
read once), ``phases`` (the phase interface), ``scoring`` and ``loading`` (the two phases),
``_session`` (the one module that touches the Gym runtime), ``progress``, ``report``, ``plot``,
``run``.
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
