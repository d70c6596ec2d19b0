"""Process-tree teardown through /proc: nothing left behind, only stragglers reported, and no
psutil needed (the runtime is part of the base install)."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import time

from envkit.gym.processes import ProcessTree, TrackedProcess


def _leader(code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    time.sleep(0.5)  # let it start its children
    return proc


def test_a_tree_that_ignores_sigint_is_killed_and_reported() -> None:
    proc = _leader("import signal,subprocess,time;"
                   "signal.signal(signal.SIGINT, signal.SIG_IGN);"
                   "subprocess.Popen(['sleep','300']); time.sleep(300)")
    tree = ProcessTree(proc.pid)
    assert len(tree.alive()) == 2
    killed = tree.terminate(grace_s=0.5)
    proc.wait(timeout=5)
    assert tree.alive() == []
    assert len(killed) == 2
    assert any(k.cmdline == "sleep 300" for k in killed)  # read before the kill
    assert tree.leader_exit_s is None


def test_a_tree_that_stops_on_sigint_is_not_reported() -> None:
    """Gym's way: SIGINT to the group and everyone exits on their own; nothing was killed."""
    proc = _leader("import subprocess,time; subprocess.Popen(['sleep','300']); time.sleep(300)")
    tree = ProcessTree(proc.pid)
    assert len(tree.alive()) == 2
    assert tree.terminate(grace_s=60) == []
    proc.wait(timeout=5)
    assert tree.alive() == []
    assert tree.leader_exit_s is not None


def test_a_reparented_daemon_is_found_by_its_session() -> None:
    """A daemon whose parent exited (re-parented to init, as Ray's are) is never a descendant
    of the leader any more, but it keeps the session; a background job of a shell ignores
    SIGINT, so it must be killed."""
    proc = _leader("import subprocess,time;"
                   "subprocess.run(['sh','-c','sleep 301 >/dev/null 2>&1 &']); time.sleep(300)")
    tree = ProcessTree(proc.pid)  # created after the daemon's parent exited
    cmdlines = sorted(p.cmdline() for p in tree.alive())
    assert "sleep 301" in cmdlines
    killed = tree.terminate(grace_s=2)
    proc.wait(timeout=5)
    assert [k.cmdline for k in killed] == ["sleep 301"]
    assert tree.leader_exit_s is not None  # it outlived the leader's own shutdown
    assert tree.alive() == []


def test_a_recycled_pid_is_not_this_process() -> None:
    proc = _leader("import time; time.sleep(300)")
    (me,) = ProcessTree(proc.pid).alive()
    assert me.running()
    assert not TrackedProcess(me.pid, me.started + 1).running()
    assert not TrackedProcess(me.pid, me.started + 1).kill()
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


def test_close_says_nothing_when_gym_stops_as_it_should(tmp_path, caplog) -> None:
    runtime = _runtime_with(tmp_path, "import subprocess,time; subprocess.Popen(['sleep','300']);"
                                      "time.sleep(300)")
    with caplog.at_level(logging.INFO, logger="envkit.gym.servers"):
        runtime.close()
    assert caplog.records == []


def test_close_names_what_outlived_gyms_shutdown(tmp_path, caplog) -> None:
    runtime = _runtime_with(tmp_path, "import subprocess,time;"
                                      "subprocess.run(['sh','-c','sleep 302 >/dev/null 2>&1 &']);"
                                      "time.sleep(300)")
    with caplog.at_level(logging.INFO, logger="envkit.gym.servers"):
        runtime.close()
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert record.getMessage() == (
        "killed 1 process(es) still running after Gym's shutdown: sleep 302")


_IGNORES_SIGINT = ("import signal,time; signal.signal(signal.SIGINT, signal.SIG_IGN);"
                   "time.sleep(300)")


def test_a_shutdown_the_grace_cut_short_is_said_at_a_final_close(tmp_path, caplog) -> None:
    runtime = _runtime_with(tmp_path, _IGNORES_SIGINT)
    with caplog.at_level(logging.INFO, logger="envkit.gym.servers"):
        runtime.close(grace_s=0.5)
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert record.getMessage().startswith(
        "Gym's shutdown did not finish within 0.5s; killed 1 process(es): python")


def test_a_restart_stops_the_broken_tree_quietly(tmp_path, caplog) -> None:
    """A restart (or the retry after Ray's start timed out) kills on purpose: a debug note."""
    runtime = _runtime_with(tmp_path, _IGNORES_SIGINT)
    with caplog.at_level(logging.DEBUG, logger="envkit.gym.servers"):
        runtime.close(grace_s=0.5, final=False)
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "killed 1 process(es)" in caplog.records[0].getMessage()
