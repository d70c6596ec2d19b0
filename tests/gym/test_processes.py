"""Process-tree teardown through /proc: nothing left behind, only stragglers reported, and no
psutil needed (the runtime is part of the base install)."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from envkit.gym.processes import ProcessTree, TrackedProcess


def _leader(code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    time.sleep(0.5)  # let it start its children
    return proc


def test_a_tree_that_ignores_sigterm_is_killed_and_reported() -> None:
    proc = _leader("import signal,subprocess,time;"
                   "signal.signal(signal.SIGTERM, signal.SIG_IGN);"
                   "subprocess.Popen(['sh','-c','trap \"\" TERM; sleep 300']); time.sleep(300)")
    tree = ProcessTree(proc.pid)
    assert len(tree.alive()) >= 2
    started = time.monotonic()
    killed = tree.terminate(grace_s=0.5)
    proc.wait(timeout=5)
    assert tree.alive() == []
    assert time.monotonic() - started < 3  # the grace, then SIGKILL: no sequential waits
    assert proc.pid in {k.pid for k in killed}
    assert "sleep 300" in {k.cmdline for k in killed}  # read before the kill


def test_a_tree_that_stops_on_sigterm_is_not_reported() -> None:
    """Every process gets SIGTERM at once and exits on its own: nothing was killed."""
    proc = _leader("import subprocess,time; subprocess.Popen(['sleep','300']); time.sleep(300)")
    tree = ProcessTree(proc.pid)
    assert len(tree.alive()) == 2
    assert tree.terminate(grace_s=60) == []
    proc.wait(timeout=5)
    assert tree.alive() == []


def test_a_reparented_daemon_is_found_by_its_session_and_stopped() -> None:
    """A daemon whose parent exited (re-parented to init, as Ray's are) is never a descendant
    of the leader any more, but it keeps the session: it is stopped with the rest."""
    proc = _leader("import subprocess,time;"
                   "subprocess.run(['sh','-c','sleep 301 >/dev/null 2>&1 &']); time.sleep(300)")
    tree = ProcessTree(proc.pid)  # created after the daemon's parent exited
    daemon = next(p for p in tree.alive() if p.cmdline() == "sleep 301")
    tree.terminate(grace_s=2)
    proc.wait(timeout=5)
    assert not daemon.running()
    assert tree.alive() == []


def test_a_recycled_pid_is_not_this_process() -> None:
    proc = _leader("import time; time.sleep(300)")
    (me,) = ProcessTree(proc.pid).alive()
    assert me.running()
    assert not TrackedProcess(me.pid, me.started + 1).running()
    assert not TrackedProcess(me.pid, me.started + 1).send(signal.SIGKILL)
    proc.kill()
    proc.wait(timeout=5)
    assert not me.running()


def test_the_runtime_imports_and_tears_down_without_psutil() -> None:
    code = textwrap.dedent("""
        import subprocess, sys, time
        sys.modules["psutil"] = None  # any `import psutil` now fails
        import envkit.gym, envkit.smoke, envkit.cli.smoke
        from envkit.gym.processes import ProcessTree
        proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
        tree = ProcessTree(proc.pid)
        tree.terminate(grace_s=5)
        proc.wait(timeout=5)
        assert tree.alive() == []
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr


def _runtime_with(tmp_path, code: str):
    """A runtime (on a real toy package) whose tracked tree is the given leader."""
    from toy_envs import make_native_package

    from envkit.gym import GymRuntime, PolicyEndpoint, RuntimeOptions

    runtime = GymRuntime(make_native_package(tmp_path / "pkg"),
                         PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m"), RuntimeOptions())
    proc = _leader(code)
    runtime._proc, runtime._tree = proc, ProcessTree(proc.pid)
    return runtime


def test_close_says_nothing_when_the_tree_stops_within_the_grace(tmp_path, caplog) -> None:
    runtime = _runtime_with(tmp_path, "import subprocess,time; subprocess.Popen(['sleep','300']);"
                                      "time.sleep(300)")
    with caplog.at_level(logging.INFO, logger="envkit.gym.servers"):
        runtime.close()
    assert caplog.records == []


_IGNORES_SIGTERM = ("import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
                    "time.sleep(300)")


@pytest.mark.parametrize("final", [True, False])
def test_what_outlived_the_grace_is_killed_with_a_debug_note(tmp_path, caplog, final) -> None:
    """Ray's daemons and Gym's head outlive a SIGTERM's second at every close: killing them is
    the plan, not news (a final close, or a restart's)."""
    runtime = _runtime_with(tmp_path, _IGNORES_SIGTERM)
    proc = runtime._proc
    with caplog.at_level(logging.DEBUG, logger="envkit.gym.servers"):
        runtime.close(grace_s=0.5, final=final)
    assert proc.wait(timeout=5) == -9
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "killed 1 process(es) after 0.5s: python" in caplog.records[0].getMessage()
