"""``envkit probe``: will this package train? Reward integrity, learning signal and load.

Static validation first; then the package's real Gym servers, brought up once as ``envkit
smoke`` does (offline in a namespace under ``--offline``), driven by a panel of scripted
policies (the rows' reference answer and content-free replies, ``policies``) at low
concurrency, then the reference replayed at rising concurrency up to the job's. Every finding
is a diagnostic with an EK8xx code (``envkit rule EK801``). The names below are its face.

Two rooms, split by whether a module talks to a server:

- ``phases/``: the steps that drive the running servers (the phase interface in its
  ``__init__``; ``session``, the one module that touches the Gym runtime; ``scoring``,
  ``reasoning``, ``load``, ``model``, ``fixtures``);
- ``analysis/``: pure functions over what was observed, no I/O (``observations``,
  ``integrity``, ``determinism``, ``learning``, ``load``, ``zero_variance``, ``fields``,
  ``declared``, ``job``; causes before consequences in ``verdicts``).

Beside them: ``policies`` (the panel), ``thresholds``, ``inputs`` (rows, job, manifests, read
once), ``progress``, ``report``, ``write``, ``plot``, ``run``.
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
