"""EK7xx: what only a real spin-up finds (``envkit smoke``), as rules ``envkit rule`` explains.

Why rules without checks: a server that never answers, a reward that is not a number or a
download at start-up cannot be seen in the package's files; ``envkit smoke`` brings the servers
up and reports these codes (reading logs next to ``runtime_signatures``), and a failure that is
really a static rule's keeps that rule's code (a module the venv lacks: EK403). ``CHECKS`` is
empty: no static pass reports them. Their failing fixtures are the ``fixtures/smoke_*``
packages, exercised by ``tests/smoke/test_run_gym.py``.
"""

from __future__ import annotations

from envkit.model.diagnostics import Severity
from envkit.validators._base import Check, Rule

__all__ = ["CHECKS", "EK701", "EK702", "EK703", "EK704", "EK705", "RULES", "SPINUP_FIXTURES"]

EK701 = Rule(
    "EK701", Severity.ERROR, "a server did not become ready within the spin-up timeout",
    "The training image waits a bounded time for every Gym server to answer; a server that "
    "hangs at start-up (a blocking warm-up, a model download, a deadlock) holds the whole job "
    "at its first step and then fails it, after the GPUs were allocated.",
    "Read the server's log tail in the report: move slow work out of start-up (load lazily), "
    "vendor what it downloads, or raise `envkit smoke --timeout` if the start-up is merely slow.",
)
EK702 = Rule(
    "EK702", Severity.ERROR, "a rollout returned no numeric reward",
    "GRPO needs a number per rollout: Gym's `/run` answer carries `reward`, and a verifier "
    "that returns a string, None or a dict fails Gym's response model, so every rollout of the "
    "environment fails and training has nothing to learn from.",
    "Make the resources server's `verify` return a float `reward` (e.g. `float(score)`); check "
    "with `envkit smoke PKG`.",
)
EK703 = Rule(
    "EK703", Severity.ERROR,
    "a server reached for the network at spin-up although the package claims offline",
    "Under `offline: true` the cluster has no egress: a server that downloads a model, a "
    "dataset or a package at start-up works on a laptop and fails on the cluster.",
    "Vendor what it fetches (wheels/, data files in the server dir) or drop the offline claim; "
    "`envkit smoke PKG --offline` shows the host it tried to reach.",
)
EK704 = Rule(
    "EK704", Severity.ERROR, "a rollout failed (the agent or a server answered with an error)",
    "Every agent must complete a rollout against a policy endpoint; an exception in the agent "
    "or the resources server (a bad request shape, a crash in `verify`) fails every row of "
    "that agent during training.",
    "Read the failure and the server's log tail in the report, fix the server, and rerun "
    "`envkit smoke PKG` (`--dataset` sends your own rows).",
)

EK705 = Rule(
    "EK705", Severity.ERROR, "a server failed to start for a reason no rule names",
    "A server process that exits at start-up stops the whole job at its first step, whatever "
    "the reason; when its log matches no known signature, envkit can only point at the log.",
    "Read the server's log tail in the report (`envkit smoke PKG --keep-logs DIR` keeps every "
    "log), fix the server, and rerun `envkit smoke PKG`.",
)

RULES: tuple[Rule, ...] = (EK701, EK702, EK703, EK704, EK705)
CHECKS: tuple[Check, ...] = ()

SPINUP_FIXTURES = {
    "EK701": "fixtures/smoke_never_ready",
    "EK702": "fixtures/smoke_string_reward",
    "EK703": "fixtures/smoke_network_offline",
    "EK704": "tests/smoke/test_run.py::test_rollout_diagnosis",
    "EK705": "tests/smoke/test_findings.py::test_an_unrecognised_start_failure_is_ek705",
}
"""Rule -> where a spin-up fails with it: the ``fixtures/smoke_*`` package that
``tests/smoke/test_run_gym.py`` brings up, or (EK704 and EK705, any other failed rollout or
start: no package is built to crash at random) the test of the diagnosis that assigns it."""
