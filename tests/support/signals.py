"""The interrupt the suite's children get: Ctrl-C must reach them however pytest was started.

Why: a non-interactive shell starts a background job (``cmd &``, ``nohup``) with SIGINT
ignored, and an ignored signal stays ignored across ``exec``; Python then installs no
KeyboardInterrupt handler, so every envkit process a test interrupts with SIGINT would run on
to its end (seen: three interrupt tests exiting 0 instead of 130 in a backgrounded run).
"""

from __future__ import annotations

import signal

__all__ = ["restore_sigint"]


def restore_sigint() -> bool:
    """Give this process Python's own SIGINT handler when it inherited SIGINT ignored (its
    children then start with the default disposition); True when it did."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return False
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return True
