"""CI's groups: every test in exactly one, what each need selects, and the two rules conftest
enforces on a real pytest run (a test in no group is refused; in CI a skip fails the run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from envkit.gym.types import GYM_RAY_ADDRESS_ENV
from support.ci_groups import COST_S, GROUPS, INTERPRETERS, NEEDS, expression, groups_of
from support.gym_ray import OWN_RAY
from support.paths import REPO_ROOT, SUPPORT
from support.proc_marks import new_mark, survivors
from support.run_groups import (
    BACKGROUND_NICE,
    BACKGROUND_SHARES,
    CGROUP_V1_CPU,
    CGROUP_V1_CPUACCT,
    Run,
    accounting_cgroup,
    background_cgroup,
    cpu_seconds,
    lane_env,
    pytest_command,
    schedule,
    shared_gym_ray,
    summary,
)


@pytest.mark.parametrize("need", list(NEEDS))
def test_a_test_with_one_need_is_in_that_group_only(need: str) -> None:
    assert groups_of({need, "slow"}) == [need]


def test_a_test_with_several_needs_is_counted_in_the_heaviest() -> None:
    assert groups_of({"slow", "network", "gym", "train"}) == ["train"]
    assert groups_of({"slow", "network", "platform"}) == ["platform"]
    assert groups_of({"slow", "ray", "gym"}) == ["ray"]
    # its own interpreter: a vLLM test runs in the vllm group, whatever else it needs
    assert groups_of({"slow", "vllm", "train", "gym", "network"}) == ["vllm"]


def test_a_group_with_its_own_interpreter_runs_pytest_through_its_builder() -> None:
    cmd = pytest_command("vllm")
    assert cmd[:3] == [sys.executable, str(REPO_ROOT / "tests/support/vllm_venv.py"), "--exec"]
    assert cmd[3:7] == ["-m", "pytest", "-m", expression("vllm")]
    assert pytest_command("train")[:2] == [sys.executable, "-m"]
    assert set(INTERPRETERS) <= set(NEEDS)


def test_an_unmarked_test_is_fast_and_a_bare_slow_one_is_in_no_group() -> None:
    assert groups_of({"parametrize", "timeout"}) == ["fast"]
    assert groups_of({"slow"}) == []


def test_the_groups_are_the_fast_one_then_one_per_need() -> None:
    assert GROUPS == ("fast", "vllm", "platform", "ray", "train", "gym", "network")
    assert expression("network") == \
        "network and not vllm and not platform and not ray and not train and not gym"
    with pytest.raises(KeyError, match="no CI group"):
        expression("slowest")


def test_pyproject_registers_exactly_the_umbrella_and_the_needs() -> None:
    ini = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))
    markers = ini["tool"]["pytest"]["ini_options"]["markers"]
    assert {line.split(":", 1)[0] for line in markers} == {"slow", *NEEDS, OWN_RAY}
    assert "--strict-markers" in ini["tool"]["pytest"]["ini_options"]["addopts"]


def test_test_sh_runs_every_group_through_the_lane_runner() -> None:
    script = (REPO_ROOT / "scripts" / "test.sh").read_text("utf-8")
    assert "exec .venv/bin/python tests/support/run_groups.py" in script
    assert "bash scripts/test.sh" in (REPO_ROOT / ".ci" / "run").read_text("utf-8")
    assert set(COST_S) == set(GROUPS)


def test_groups_start_longest_first() -> None:
    assert schedule(list(GROUPS))[0] == max(GROUPS, key=COST_S.__getitem__)
    assert schedule(["fast", "network"]) == ["network", "fast"]


_STAND_IN_BUILDER = """import os, sys
from pathlib import Path
site = Path(__file__).resolve().parent / "stand-in-site"
(site / "vllm").mkdir(parents=True, exist_ok=True)
(site / "vllm" / "__init__.py").write_text("")
assert sys.argv[1] == "--exec"
os.environ["PYTHONPATH"] = str(site)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


def _suite(tmp_path: Path, body: str) -> Path:
    """A throwaway suite under the real conftest and its helpers (copied), with one test file."""
    tests = tmp_path / "tests"
    (tests / "support").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "tests" / "conftest.py", tests / "conftest.py")
    for helper in ("ci_groups.py", "signals.py", "gym_ray.py", "run_groups.py"):
        shutil.copy(SUPPORT / helper, tests / "support" / helper)
    (tests / "support" / "__init__.py").write_text("")
    # the vllm group's builder, standing in: its interpreter is this one with a `vllm` module
    (tests / "support" / "vllm_venv.py").write_text(_STAND_IN_BUILDER)
    lines = "\n".join(f"    {name}: x" for name in ("slow", *NEEDS))
    (tmp_path / "pytest.ini").write_text(f"[pytest]\naddopts = --strict-markers -p no:cacheprovider"
                                         f"\nmarkers =\n{lines}\n")
    (tests / "test_x.py").write_text("import pytest\n\n" + body)
    return tmp_path


def _pytest(root: Path, *args: str, ci: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["ENVKIT_TEST_OWN_RAY"] = "1"  # its `gym` tests are stand-ins: no shared Ray cluster
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "tests", *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_run_with_a_test_in_no_group_is_refused(tmp_path: Path) -> None:
    root = _suite(tmp_path, "@pytest.mark.slow\ndef test_stray():\n    pass\n\n"
                            "def test_fast():\n    pass\n")
    done = _pytest(root, "-m", "not slow")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "tests/test_x.py::test_stray: no group" in done.stderr


def test_a_need_marker_makes_a_test_slow(tmp_path: Path) -> None:
    root = _suite(tmp_path, "@pytest.mark.gym\ndef test_gym():\n    pass\n\n"
                            "def test_fast():\n    pass\n")
    slow = _pytest(root, "-m", "slow", "--collect-only")
    assert "test_gym" in slow.stdout and "test_fast" not in slow.stdout, slow.stdout
    assert _pytest(root, "-m", "not slow").stdout.count("passed") == 1


def test_in_ci_a_skip_fails_the_run_and_outside_it_does_not(tmp_path: Path) -> None:
    root = _suite(tmp_path, "def test_skips():\n    pytest.skip('no torch')\n")
    assert _pytest(root).returncode == pytest.ExitCode.OK
    done = _pytest(root, ci=True)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout
    assert "nothing may be skipped in CI" in done.stdout


def test_the_runner_runs_every_group_two_at_a_time_and_reports_the_first_failure(
    tmp_path: Path,
) -> None:
    """Each group is its own pytest run; two overlap, and a third in the background at lower
    CPU priority; a failing group fails the run but the others still run, and the status is
    the first failing group's in CI order."""
    marks = tmp_path / "marks"
    marks.mkdir()
    threads = lane_env({}, lanes=2, cpus=os.cpu_count() or 1)["OMP_NUM_THREADS"]
    body = "import os\nimport time\nfrom pathlib import Path\n\n"
    for group in GROUPS:
        mark = "" if group == "fast" else f"@pytest.mark.{group}\n"
        fails = "    assert False, 'fails on purpose'\n" if group in {"ray", "network"} else ""
        body += (f"{mark}def test_{group}():\n"
                 f"    Path({str(marks)!r}, '{group}.start').touch()\n"
                 f"    deadline = time.monotonic() + 30\n"  # until another group has started
                 f"    while len(list(Path({str(marks)!r}).glob('*.start'))) < 2 "
                 f"and time.monotonic() < deadline:\n"
                 f"        time.sleep(0.05)\n"
                 f"    assert len(list(Path({str(marks)!r}).glob('*.start'))) >= 2, 'alone'\n"
                 f"    assert os.environ['OMP_NUM_THREADS'] == {threads!r}, 'threads'\n"
                 f"    Path({str(marks)!r}, '{group}.nice').write_text(str(os.nice(0)))\n"
                 f"    Path({str(marks)!r}, '{group}.cgroup').write_text("
                 f"Path('/proc/self/cgroup').read_text())\n"
                 f"{fails}\n")
    root = _suite(tmp_path, body)
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["ENVKIT_TEST_OWN_RAY"] = "1"  # its `gym` test is a stand-in: no shared Ray cluster
    cgroups_before = set(CGROUP_V1_CPU.glob("envkit-ci-*"))
    acct_before = set(CGROUP_V1_CPUACCT.glob("envkit-ci-*"))
    done = subprocess.run([sys.executable, "tests/support/run_groups.py", "--lanes", "2",
                           "--background", "1"],
                          cwd=root, capture_output=True, text=True, timeout=300, check=False,
                          env=env)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    table = done.stdout.rsplit("==> test groups", 1)[1].splitlines()[1:]
    assert [line.split()[0] for line in table] == [*GROUPS, "all"]
    exits = {line.split()[0]: line.split()[line.split().index("exit") + 1] for line in table}
    assert exits == {**dict.fromkeys(GROUPS, "0"), "ray": "1", "network": "1", "all": "1"}, \
        done.stdout[-6000:]
    for group in GROUPS:  # each group's own output, whole
        assert f'==> group {group}: pytest -m "{expression(group)}"' in done.stdout
    assert done.stdout.count("fails on purpose") >= 2
    assert "2 at a time + 1 in the background" in done.stdout
    assert "AssertionError: alone" not in done.stdout
    assert "AssertionError: threads" not in done.stdout
    # the third of the longest-first start is in the background, niced; the lanes' are not
    behind = {line.split()[0] for line in table if line.endswith("(background)")}
    assert schedule(list(GROUPS))[2] in behind and schedule(list(GROUPS))[0] not in behind
    nice = {group: int((marks / f"{group}.nice").read_text()) for group in GROUPS}
    base = os.nice(0)  # this run may itself be in the background (capped at 19)
    assert nice == {g: min(19, base + BACKGROUND_NICE * (g in behind)) for g in GROUPS}, nice
    assert f"--> group {schedule(list(GROUPS))[2]} started (background: nice +" in done.stderr
    # where the machine gives a cpu cgroup, the background groups (and only they) are in it
    weighted = f"cpu.shares {BACKGROUND_SHARES})" in done.stderr
    with background_cgroup() as probe:
        assert weighted == (probe is not None)
    # compared with this test's own cgroup: in CI this test may itself run in the background
    own = _cpu_cgroup(Path("/proc/self/cgroup").read_text())
    inside = {g for g in GROUPS if _cpu_cgroup((marks / f"{g}.cgroup").read_text()) != own}
    assert inside == (behind if weighted else set()), inside
    assert set(CGROUP_V1_CPU.glob("envkit-ci-*")) <= cgroups_before  # its own is removed
    # where the machine counts CPU per cgroup, every group's CPU seconds are in the table (the
    # test's own process is one of them), and the counting cgroups are removed
    counting = accounting_cgroup(f"envkit-ci-probe-{os.getpid()}")
    if counting is not None:
        counting.rmdir()
    assert all(("CPU s" in line) == (counting is not None) for line in table), table
    assert set(CGROUP_V1_CPUACCT.glob("envkit-ci-*")) <= acct_before


def _cpu_cgroup(proc_cgroup: str) -> str:
    """The ``cpu`` controller's line of a ``/proc/PID/cgroup`` (the whole text where none)."""
    return next((line for line in proc_cgroup.splitlines()
                 if "cpu" in line.split(":")[1].split(",")), proc_cgroup)


def test_the_background_cgroup_falls_back_to_none_and_leaves_nothing(tmp_path: Path) -> None:
    """A cgroup where the parent takes one (here a plain directory standing in for the
    controller's), none where it cannot be made, and nothing left behind either way."""
    with background_cgroup(tmp_path) as made:
        assert made is not None and (made / "cpu.shares").read_text() == str(BACKGROUND_SHARES)
        (made / "cpu.shares").unlink()  # the kernel's files go with the group; a plain dir's not
    assert list(tmp_path.iterdir()) == []
    with background_cgroup(tmp_path / "no-such-controller") as none:
        assert none is None
    assert list(tmp_path.iterdir()) == []


def test_a_counting_cgroup_reads_its_cpu_seconds_and_is_removed(tmp_path: Path) -> None:
    """A plain directory stands in for the controller's: its usage read in seconds, the
    cgroup removed after; none where it cannot be made, and no figure where none is read."""
    made = accounting_cgroup("g", tmp_path)
    assert made == tmp_path / "g"
    (made / "cpuacct.usage").write_text("2500000000\n")
    assert cpu_seconds(made) == 2.5
    (made / "cpuacct.usage").unlink()  # the kernel's files go with the group; a plain dir's not
    assert cpu_seconds(made) is None
    made.rmdir()
    assert accounting_cgroup("g", tmp_path / "no-such-controller") is None
    assert list(tmp_path.iterdir()) == []


def test_the_summary_gives_cpu_seconds_where_every_group_has_them() -> None:
    def run(group: str, cpu: float | None) -> Run:
        return Run(group, Path(f"{group}.log"), None, seconds=10.0, cpu_s=cpu, rc=0)  # type: ignore[arg-type]
    table, status = summary([run("gym", 30.0), run("fast", 4.0)], 12.0)
    assert status == 0
    assert table.splitlines() == ["fast         10s      4 CPU s  exit 0",
                                  "gym          10s     30 CPU s  exit 0",
                                  "all          12s     34 CPU s  exit 0"]
    table, _ = summary([run("gym", 30.0), run("fast", None)], 12.0)
    assert table.splitlines()[-1] == "all          12s  exit 0"
    table, _ = summary([run("gym", 30.0), run("fast", 4.0)], 12.0, ray_cpu_s=6.0)
    assert table.splitlines()[-2:] == ["gym-ray      12s      6 CPU s  (shared cluster)",
                                       "all          12s     40 CPU s  exit 0"]


def test_each_lane_gets_its_share_of_the_cores_as_openmp_threads() -> None:
    """Two lanes on two cores: one OpenMP thread each (torch's idle threads spin on the core
    the other lane needs); a value the caller set is kept."""
    assert lane_env({"A": "1"}, lanes=2, cpus=2) == {"A": "1", "OMP_NUM_THREADS": "1"}
    assert lane_env({}, lanes=2, cpus=8)["OMP_NUM_THREADS"] == "4"
    assert lane_env({}, lanes=4, cpus=2)["OMP_NUM_THREADS"] == "1"
    assert lane_env({"OMP_NUM_THREADS": "3"}, lanes=2, cpus=2) == {"OMP_NUM_THREADS": "3"}


@pytest.mark.gym
@pytest.mark.own_ray  # the variable unset, as in a run that starts the cluster itself
def test_the_groups_share_one_gym_ray_cluster_that_is_stopped_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real cluster (Gym's Ray, Gym's Python): its address in the groups' environment while
    they run, nothing of it left after, its CPU counted; none for groups that bring no Gym up."""
    monkeypatch.delenv("ENVKIT_TEST_OWN_RAY", raising=False)
    mark = new_mark(monkeypatch)
    with shared_gym_ray(["fast", "network"], tmp_path) as none:
        assert none is None and GYM_RAY_ADDRESS_ENV not in os.environ
    with shared_gym_ray(["fast", "gym"], tmp_path) as acct:
        address = os.environ[GYM_RAY_ADDRESS_ENV]
        assert address.rsplit(":", 1)[1].isdigit(), address
        assert survivors(mark, wait_s=0), "no cluster process carries the run's environment"
    assert GYM_RAY_ADDRESS_ENV not in os.environ
    assert survivors(mark) == []
    if acct is not None:
        assert (cpu_seconds(acct) or 0) > 0
