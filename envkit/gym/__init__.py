"""The Gym runtime: bring a package's real nemo-gym servers up, send rows, tear it all down.

Used by ``envkit rollout``, ``envkit smoke`` and the trainer; it knows nothing of training or
of smoke verdicts. The names below are its face: other packages import from ``envkit.gym``
only, never from its modules (whose layout may change).

- :class:`GymSession` -- policy endpoint + servers, up and down together; :meth:`dead` and
  :meth:`failure` say whether Gym still serves, :meth:`server_log` reads a server's log;
- :class:`RuntimeEvents` -- callbacks on each step of a start (:class:`VenvStep`: a venv's);
  :func:`observing` tells an observer about every runtime (the CLI's progress);
- :class:`GymRuntimeError` -- a start (or Gym) failed: likely EK code, the failed ``server``,
  the servers ``not_ready``, the log tail;
- :func:`collect` (+ :class:`RequestOptions`) -- rows to ``/run``, answers as :class:`Rollout`;
  :func:`post_row` -- one JSON body to any server route (a resources server's ``/verify``);
- :func:`load_rows` / :func:`expand_rows` -- a dataset's rows, read by the validator's reader;
- :func:`diagnose` -- a failure's text -> the likely rule (the one signature table);
- :func:`prefetch` -- Gym's venv and a package's server venvs built ahead, nothing started;
- :class:`RunFile` (``run.json``) -- which package and bring-up a recorded run's rollouts came
  from, what ``envkit rescore`` reads;
- :func:`ensure_gym_venv` -- the cached Python 3.13 venv with ``nemo-gym``;
  :func:`python_override_from_env` -- ``$ENVKIT_ALLOW_PYTHON_OVERRIDE``
  (:data:`PYTHON_OVERRIDE_ENV`) as its flag reads it.
"""

from __future__ import annotations

from envkit.gym.client import (
    RequestOptions,
    RolloutAbortedError,
    append_results,
    collect,
    mean_reward_by_agent,
    post_row,
    write_results,
)
from envkit.gym.diagnose import Finding, Where, diagnose, tail
from envkit.gym.events import RuntimeEvents, VenvStep, observing
from envkit.gym.prefetch import PrefetchResult, prefetch, prefetch_options
from envkit.gym.processes import free_port
from envkit.gym.rollout import Rollout, TokenTurn
from envkit.gym.rows import expand_rows, load_rows, rows_by_agent
from envkit.gym.runfile import ROLLOUTS_FILE, RunFile, read_run_file, write_run_file
from envkit.gym.servers import GymRuntime
from envkit.gym.session import GymSession, unreachable
from envkit.gym.types import (
    GymRuntimeError,
    GymServers,
    PolicyEndpoint,
    RuntimeOptions,
    ServerInfo,
)
from envkit.gym.venv import (
    DEFAULT_GYM_VERSION,
    PYTHON_OVERRIDE_ENV,
    GymVenv,
    GymVenvError,
    ensure_gym_venv,
    python_override_from_env,
)

__all__ = [
    "DEFAULT_GYM_VERSION",
    "PYTHON_OVERRIDE_ENV",
    "ROLLOUTS_FILE",
    "Finding",
    "GymRuntime",
    "GymRuntimeError",
    "GymServers",
    "GymSession",
    "GymVenv",
    "GymVenvError",
    "PolicyEndpoint",
    "PrefetchResult",
    "RequestOptions",
    "Rollout",
    "RolloutAbortedError",
    "RunFile",
    "RuntimeEvents",
    "RuntimeOptions",
    "ServerInfo",
    "TokenTurn",
    "VenvStep",
    "Where",
    "append_results",
    "collect",
    "diagnose",
    "ensure_gym_venv",
    "expand_rows",
    "free_port",
    "load_rows",
    "mean_reward_by_agent",
    "observing",
    "post_row",
    "prefetch",
    "prefetch_options",
    "python_override_from_env",
    "read_run_file",
    "rows_by_agent",
    "tail",
    "unreachable",
    "write_results",
    "write_run_file",
]
