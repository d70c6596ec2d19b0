"""The one logging set-up: records go to stderr as ``envkit: message``, at a level ``-q/-v``
choose. Plain text (no rich): a command that logs little (``envkit validate`` in a pre-commit
hook) should not pay for a rendering library, and CI logs stay greppable.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["apply_verbosity", "configure_logging", "level_for"]

_PREFIX = {logging.WARNING: "warning: ", logging.ERROR: "error: ", logging.CRITICAL: "error: ",
           logging.DEBUG: "debug: "}


class _StderrHandler(logging.Handler):
    """Writes to the *current* ``sys.stderr`` (pytest and click swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            prefix = _PREFIX.get(record.levelno, "")
            sys.stderr.write(f"envkit: {prefix}{record.getMessage()}\n")
            sys.stderr.flush()
        except Exception:  # logging must never raise into the caller
            self.handleError(record)


def level_for(verbosity: int) -> int:
    """0: INFO; -1: WARNING; -2 and below: ERROR; 1 and above: DEBUG."""
    if verbosity >= 1:
        return logging.DEBUG
    return {0: logging.INFO, -1: logging.WARNING}.get(verbosity, logging.ERROR)


def apply_verbosity(verbosity: int) -> None:
    """envkit's loggers at ``level_for(verbosity)``; everyone else's debug records only from
    ``-vv`` on. Why: ``-v`` is for envkit's own trace, and a library's (matplotlib scoring
    every font file it finds, urllib3's connection pool) buried it in hundreds of lines."""
    level = level_for(verbosity)
    logging.getLogger("envkit").setLevel(level)
    logging.getLogger().setLevel(level if verbosity >= 2 else max(level, logging.INFO))


def configure_logging(verbosity: int) -> None:
    """Route every logger to stderr at ``verbosity``; replaces earlier handlers.

    vLLM installs a handler of its own on its loggers when it starts an engine, writing to
    stdout unless ``VLLM_LOGGING_STREAM`` says otherwise: it is pointed at stderr here (unless
    the user chose a stream), before any command starts an engine or a process that does, so
    ``envkit train --backend vllm --output-format json`` prints only its result on stdout.
    """
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    logging.basicConfig(handlers=[_StderrHandler()], force=True)
    apply_verbosity(verbosity)
