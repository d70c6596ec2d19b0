"""``restore_sigint``: a suite started with SIGINT ignored still starts interruptible children."""

from __future__ import annotations

import signal
import subprocess
import sys

from support.paths import REPO_ROOT

CHILD = ("import signal, sys; "
         "sys.exit(0 if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 3)")


def _ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _parent(restore: bool) -> int:
    """A process started with SIGINT ignored (as ``cmd &`` starts it) that starts a child,
    after ``restore_sigint()`` when ``restore``: the child's exit says what it inherited."""
    code = (f"import subprocess, sys; sys.path.insert(0, {str(REPO_ROOT / 'tests')!r}); "
            "from support.signals import restore_sigint; "
            f"{'assert restore_sigint(); ' if restore else ''}"
            f"sys.exit(subprocess.run([sys.executable, '-c', {CHILD!r}]).returncode)")
    return subprocess.run([sys.executable, "-c", code], preexec_fn=_ignored, timeout=60,
                          check=False).returncode


def test_a_child_of_a_backgrounded_suite_gets_python_s_sigint_handler() -> None:
    assert _parent(restore=False) == 3  # what the children got before
    assert _parent(restore=True) == 0


def test_a_suite_started_normally_is_left_as_it_is() -> None:
    from support.signals import restore_sigint

    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    assert restore_sigint() is False
