"""The one logging set-up: records go to stderr through rich, at a level ``-q/-v`` choose.

The rich handler is built on the first record, so a command that logs nothing (``envkit
validate`` in a pre-commit hook) never pays rich's import.
"""

from __future__ import annotations

import logging

__all__ = ["configure_logging", "level_for"]


class _LazyRichHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self._inner: logging.Handler | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self._inner is None:
            from rich.console import Console
            from rich.logging import RichHandler

            self._inner = RichHandler(console=Console(stderr=True), show_path=False,
                                      show_time=False, markup=False)
            self._inner.setFormatter(logging.Formatter("%(message)s"))
        self._inner.handle(record)


def level_for(verbosity: int) -> int:
    """0: INFO; -1: WARNING; -2 and below: ERROR; 1 and above: DEBUG."""
    if verbosity >= 1:
        return logging.DEBUG
    return {0: logging.INFO, -1: logging.WARNING}.get(verbosity, logging.ERROR)


def configure_logging(verbosity: int) -> None:
    """Route every logger to stderr at ``verbosity``; replaces earlier handlers."""
    logging.basicConfig(level=level_for(verbosity), handlers=[_LazyRichHandler()], force=True)
