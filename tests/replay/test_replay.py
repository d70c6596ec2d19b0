"""``envkit validate`` answered from its last run: only while everything that run read, looked
for or listed is unchanged, and never for a run that did more than read.

Each test runs the real entry (``python -m envkit``, the console script's code) in a fresh
process with its own store. To tell a replayed answer from a new run, a test rewrites the
stored answer's output to a marker: the marker comes back exactly when the store answered.
Inputs must be older than the racy window to be stored, so the module's packages are copied
once and aged by one wait.
"""

from __future__ import annotations

import marshal
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.replay import RACY_NS

PACKAGES = REPO_ROOT / "fixtures" / "packages"
MARKER = b"<answered from the store>\n"
NAMES = ("imports", "unchanged", "same_size", "new_file", "removed", "settings", "env", "formats",
         "output_file", "no_cache", "env_no_cache", "fresh", "usage", "invalid", "module",
         "finish")


@pytest.fixture(scope="module")
def aged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One copy of the valid native-v1 package per test (each under its own workspace
    directory), older than the racy window."""
    root = tmp_path_factory.mktemp("replay")
    copies = {}
    for name in NAMES:
        source = "EK102-metadata-typo" if name in ("invalid", "formats") else "valid-native-v1"
        copies[name] = Path(shutil.copytree(PACKAGES / source / "pkg", root / name / "pkg"))
    (root / "module" / "mods").mkdir()
    (root / "module" / "mods" / "sitecustomize.py").write_text("VALUE = 1\n")
    time.sleep(RACY_NS / 1e9 + 0.2)
    return copies


def _run(args: list[str], store: Path, cwd: Path | None = None,
         **env: str) -> subprocess.CompletedProcess[bytes]:
    environ = {k: v for k, v in os.environ.items() if k not in ("ENVKIT_NO_CACHE", "PYTHONPATH")}
    environ.update(ENVKIT_CACHE_DIR=str(store), **env)
    return subprocess.run([sys.executable, "-m", "envkit", *args], capture_output=True,
                          env=environ, cwd=cwd, check=False, timeout=120)


def _entries(store: Path) -> list[Path]:
    return sorted((store / "replay").glob("*.marshal"))


def _mark(store: Path) -> None:
    """Rewrite the one stored answer's output to the marker (its status kept)."""
    [entry] = _entries(store)
    fmt, text, env, parts, _chunks, status, items = marshal.loads(entry.read_bytes())
    entry.write_bytes(marshal.dumps((fmt, text, env, parts, ((1, MARKER),), status, items)))


def _stored_and_marked(args: list[str], store: Path, **env: str) -> None:
    first = _run(args, store, **env)
    assert first.returncode in (0, 1), first.stderr.decode()
    _mark(store)
    assert _run(args, store, **env).stdout == MARKER  # the store answers while unchanged


_FINISH = """
import gc, sys
from envkit.replay import run
from envkit.replay.record import Recorder
held = []
status = run(sys.argv[1:], finish=lambda status: held.append(
    (status, sum(isinstance(o, Recorder) for o in gc.get_objects()))))
print(held, status)
"""


def test_finish_comes_once_before_the_run_lets_go_of_its_records(
        aged: dict[str, Path], tmp_path: Path) -> None:
    """``run(..., finish=exit_now)`` is how the console script ends without freeing what a
    run recorded: ``finish`` gets the status once on each path, a recorded run's answer
    already stored and its recorder still held."""
    args = ["validate", str(aged["finish"]), "--offline"]

    def once(*extra: str) -> str:
        environ = {k: v for k, v in os.environ.items() if k != "ENVKIT_NO_CACHE"}
        proc = subprocess.run([sys.executable, "-c", _FINISH, *args, *extra], check=True,
                              capture_output=True, text=True, timeout=120,
                              env={**environ, "ENVKIT_CACHE_DIR": str(tmp_path)})
        return proc.stdout.splitlines()[-1]

    assert once() == "[(0, 1)] 0"  # recorded: the recorder is still there
    assert len(_entries(tmp_path)) == 1
    assert once() == "[(0, 0)] 0"  # replayed
    assert once("--no-cache") == "[(0, 0)] 0"


def test_an_unchanged_run_is_answered_with_the_first_runs_output_and_status(
        aged: dict[str, Path], tmp_path: Path) -> None:
    for pkg, status in ((aged["unchanged"], 0), (aged["invalid"], 1)):
        store = tmp_path / pkg.parent.name
        args = ["validate", str(pkg), "--offline"]
        first, again = _run(args, store), _run(args, store)
        assert first.returncode == again.returncode == status
        assert (again.stdout, again.stderr) == (first.stdout, first.stderr)
        assert len(_entries(store)) == 1
        _mark(store)
        assert _run(args, store).stdout == MARKER


def test_a_replayed_run_imports_neither_click_nor_yaml_nor_the_rules(aged: dict[str, Path],
                                                                   tmp_path: Path) -> None:
    args = ["validate", str(aged["imports"]), "--offline"]
    _run(args, tmp_path, PYTHONPROFILEIMPORTTIME="1")
    again = _run(args, tmp_path, PYTHONPROFILEIMPORTTIME="1")
    imported = {line.split("|")[-1].strip() for line in again.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert again.stdout == b"valid: native-v1 package\n"
    assert "envkit.replay.store" in imported
    heavy = {m for m in imported if m.split(".")[0] in ("click", "yaml", "rich", "packaging")
             or m.startswith(("envkit.cli", "envkit.check", "envkit.validators", "envkit.model"))}
    assert not heavy, f"a replayed run imported {sorted(heavy)}"


@pytest.mark.parametrize("fmt", ["json", "github", "sarif", "human"])
def test_every_output_format_replays_byte_for_byte(aged: dict[str, Path], tmp_path: Path,
                                                   fmt: str) -> None:
    args = ["validate", str(aged["formats"]), "--offline", "--output-format", fmt]
    first, again = _run(args, tmp_path), _run(args, tmp_path)
    assert first.stdout and (again.stdout, again.stderr) == (first.stdout, first.stderr)
    assert _entries(tmp_path)


def test_a_same_size_rewrite_with_the_old_mtime_is_a_new_run(aged: dict[str, Path],
                                                             tmp_path: Path) -> None:
    pkg = aged["same_size"]
    args = ["validate", str(pkg), "--offline"]
    _stored_and_marked(args, tmp_path)
    manifest = pkg / "nemo-environment.yaml"
    before = manifest.stat()
    text = manifest.read_text()
    manifest.write_text(text.replace("format:", "formax:", 1))  # same size, now EK102
    os.utime(manifest, ns=(before.st_atime_ns, before.st_mtime_ns))  # only ctime moved
    again = _run(args, tmp_path)
    assert again.stdout != MARKER and again.returncode == 1 and b"EK10" in again.stdout


def test_a_new_file_in_a_listed_directory_is_a_new_run(aged: dict[str, Path],
                                                       tmp_path: Path) -> None:
    pkg = aged["new_file"]
    args = ["validate", str(pkg), "--offline"]
    _stored_and_marked(args, tmp_path)
    (pkg / "rows.jsonl").write_text("{}\n")  # no .jsonl may ship in a package
    again = _run(args, tmp_path)
    assert again.stdout != MARKER and again.returncode == 1


def test_a_removed_file_is_a_new_run(aged: dict[str, Path], tmp_path: Path) -> None:
    pkg = aged["removed"]
    args = ["validate", str(pkg), "--offline"]
    _stored_and_marked(args, tmp_path)
    config = next((pkg / "resources_servers").rglob("*.yaml"))
    config.unlink()
    again = _run(args, tmp_path)
    assert again.stdout != MARKER and again.returncode == 1


def test_a_settings_file_that_was_looked_for_and_now_exists_is_a_new_run(
        aged: dict[str, Path], tmp_path: Path) -> None:
    pkg = aged["settings"]
    args = ["validate", str(pkg), "--offline", "--output-format", "json"]
    _stored_and_marked(args, tmp_path)
    (pkg.parent / "envkit.toml").write_text('select = ["EK2"]\nstrict = true\n')
    again = _run(args, tmp_path)
    assert again.stdout != MARKER and again.returncode == 0


def test_an_environment_variable_the_run_read_is_part_of_its_answer(
        aged: dict[str, Path], tmp_path: Path) -> None:
    """click reads ``_ENVKIT_COMPLETE`` (shell completion) at every start: unset when stored,
    set now, the run is a completion script, not the stored verdict."""
    args = ["validate", str(aged["env"]), "--offline"]
    _stored_and_marked(args, tmp_path)
    again = _run(args, tmp_path, _ENVKIT_COMPLETE="bash_source")
    assert again.stdout != MARKER and b"complete" in again.stdout


def test_a_changed_module_of_the_run_is_a_new_run(aged: dict[str, Path],
                                                  tmp_path: Path) -> None:
    """Every imported module's file is an input (an upgrade of envkit or of a dependency)."""
    mods = aged["module"].parent / "mods"
    args = ["validate", str(aged["module"]), "--offline"]
    _stored_and_marked(args, tmp_path, PYTHONPATH=str(mods))
    (mods / "sitecustomize.py").write_text("VALUE = 2\n")
    assert _run(args, tmp_path, PYTHONPATH=str(mods)).stdout != MARKER


@pytest.mark.parametrize("reader", [0, 1], ids=["parent", "worker"])
def test_a_tree_validated_by_forked_workers_is_stored_with_what_each_worker_read(
        tmp_path: Path, reader: int) -> None:
    """Enough packages for a second worker (``envkit.check.workers``): its fork is no
    impurity, and a file only one process read is an input of the answer, whether the worker
    identified it at its end or the parent while it waited for the worker (either process may
    take a package from the queue: the test edits the first one, then the second)."""
    from envkit.check.workers import MIN_SHARE

    root = tmp_path / "tree"
    pkgs = [Path(shutil.copytree(PACKAGES / "valid-native-v1" / "pkg", root / f"p{i:02d}"))
            for i in range(2 * MIN_SHARE)]
    time.sleep(RACY_NS / 1e9 + 0.2)
    store = tmp_path / "store"
    args = ["validate", *map(str, pkgs), "--offline"]
    _stored_and_marked(args, store)
    config = pkgs[reader] / "resources_servers" / "echo_match" / "configs" / "echo_match.yaml"
    config.write_text(config.read_text() + "  oops: [\n")  # one process reads it: EK2xx
    again = _run(args, store)
    assert again.stdout != MARKER and again.returncode == 1
    assert f"{config}:".encode() in again.stdout


def test_a_run_that_writes_a_file_is_not_stored(aged: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    args = ["validate", str(aged["output_file"]), "--offline", "--output-format", "json",
            "-o", str(out)]
    assert _run(args, tmp_path / "store").returncode == 0 and out.is_file()
    out.unlink()
    assert _run(args, tmp_path / "store").returncode == 0 and out.is_file()
    assert not _entries(tmp_path / "store")


def test_no_cache_neither_reads_nor_stores(aged: dict[str, Path], tmp_path: Path) -> None:
    args = ["validate", str(aged["no_cache"]), "--offline"]
    _stored_and_marked(args, tmp_path)
    assert _run([*args, "--no-cache"], tmp_path).stdout == b"valid: native-v1 package\n"
    assert _run(args, tmp_path, ENVKIT_NO_CACHE="1").stdout != MARKER
    fresh = tmp_path / "other"
    _run(["validate", str(aged["env_no_cache"]), "--offline"], fresh, ENVKIT_NO_CACHE="1")
    _run(["validate", str(aged["env_no_cache"]), "--offline", "--no-cache"], fresh)
    assert not _entries(fresh)


def test_inputs_changed_within_the_racy_window_are_not_stored(aged: dict[str, Path],
                                                              tmp_path: Path) -> None:
    pkg = aged["fresh"]
    (pkg / "nemo-environment.yaml").touch()
    assert _run(["validate", str(pkg), "--offline"], tmp_path).returncode == 0
    assert not _entries(tmp_path)


def test_usage_errors_are_not_stored(aged: dict[str, Path], tmp_path: Path) -> None:
    done = _run(["validate", str(aged["usage"]), "--select", "NOPE"], tmp_path)
    assert done.returncode == 2
    assert not _entries(tmp_path)


def test_the_recorder_sees_a_subprocess_a_socket_and_a_write(tmp_path: Path) -> None:
    """In-process: the events that make a run's answer depend on more than what it read."""
    import socket

    from envkit.replay.record import Recorder

    def recorded(action) -> str | None:  # type: ignore[no-untyped-def]
        recorder = Recorder(ignore=str(tmp_path / "cache"))
        with recorder.watching():
            action()
        return recorder.impure

    assert recorded(lambda: subprocess.run(["true"], check=True)) == "subprocess.Popen"
    assert recorded(lambda: socket.socket().close()) is not None
    assert recorded(lambda: (tmp_path / "out.txt").write_text("x")) is not None
    assert recorded(lambda: (tmp_path / "cache").mkdir()) is None  # envkit's own cache
    assert recorded(lambda: (tmp_path / "in.txt").exists()) is None


def test_a_listed_and_opened_path_is_identified_once_and_a_symlink_both_ways(
        tmp_path: Path) -> None:
    """A path listed and opened is one input (its identity is the same either way), but a
    symlink's lstat is the link and its stat the target: both are kept, each exactly what
    ``identity`` gives that way."""
    from envkit.replay.record import Recorder
    from envkit.replay.store import LISTED, LSTAT, STAT, identity

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "real.txt").write_text("x")
    (tree / "link.txt").symlink_to("real.txt")
    (tree / "gone").symlink_to("missing")
    recorder = Recorder(ignore=str(tmp_path / "cache"))
    with recorder.watching():
        list(tree.iterdir())
        for name in ("real.txt", "link.txt"):
            (tree / name).read_text()
        (tree / "gone").exists()
    found = {(how, os.fspath(path)): ident for how, path, ident in recorder.inputs()}
    wanted = [(LISTED, tree), (LSTAT, tree / "real.txt"), (LSTAT, tree / "link.txt"),
              (STAT, tree / "link.txt"), (STAT, tree / "gone"), (LSTAT, tree / "gone")]
    for how, path in wanted:
        assert found[(how, str(path))] == identity(str(path), how), (how, path)
    assert (STAT, str(tree / "real.txt")) not in found  # the entry stands for it
    assert identity(str(tree / "real.txt"), STAT) == found[(LSTAT, str(tree / "real.txt"))]
    assert found[(STAT, str(tree / "link.txt"))] == found[(LSTAT, str(tree / "real.txt"))]
    assert found[(LSTAT, str(tree / "link.txt"))] != found[(STAT, str(tree / "link.txt"))]
    assert found[(STAT, str(tree / "gone"))] is None


def test_the_tee_keeps_both_streams_in_call_order(tmp_path: Path) -> None:
    from envkit.replay.record import Recorder

    recorder = Recorder(ignore=str(tmp_path))
    with recorder.watching():
        print("out 1")
        print("err 1", file=sys.stderr)
        sys.stdout.buffer.write(b"out 2\n")
    assert recorder.chunks == [(1, b"out 1"), (1, b"\n"), (2, b"err 1"), (2, b"\n"),
                               (1, b"out 2\n")]


def test_the_audit_hook_outlives_its_modules_globals(tmp_path: Path) -> None:
    """An audit hook cannot be removed, and events go on firing while the interpreter clears
    modules at exit: the hook must not need the module's globals then (a pytest run that had
    recorded once printed "Exception ignored in audit hook" after its summary)."""
    script = (
        "import envkit.replay.record as record\n"
        "with record.Recorder(ignore='').watching():\n"
        "    pass\n"
        "vars(record).clear()  # what module teardown at exit does\n"
        f"open({str(tmp_path / 'late.txt')!r}, 'w').close()  # an audit event after it\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def _exit_script(body: str) -> subprocess.CompletedProcess[str]:
    code = f"import atexit, sys\nfrom envkit.replay import exit_now\n{body}\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)


def test_exit_now_flushes_what_was_written_and_keeps_the_status() -> None:
    done = _exit_script("print('out', end=''); sys.stderr.write('err')\nexit_now(5)\n"
                        "print('not reached')")
    assert (done.returncode, done.stdout, done.stderr) == (5, "out", "err")


def test_exit_now_leaves_an_exit_with_atexit_callbacks_or_threads_to_python() -> None:
    callback = _exit_script("atexit.register(lambda: print('callback ran'))\nexit_now(3)\n"
                            "print('returned'); sys.exit(4)")
    assert (callback.returncode, callback.stdout.split()) == (4, ["returned", "callback", "ran"])
    thread = _exit_script("import threading; e = threading.Event()\n"
                          "threading.Thread(target=e.wait, daemon=True).start()\n"
                          "exit_now(3)\nprint('returned'); e.set(); sys.exit(4)")
    assert (thread.returncode, thread.stdout.strip()) == (4, "returned")


@pytest.mark.parametrize(("command", "young"), [("validate", 200_000), ("build", 700)])
def test_a_validate_process_runs_the_cyclic_collector_less_often(command: str,
                                                                   young: int) -> None:
    """Only ``envkit validate``: a trainer or a build keeps Python's collector as it is."""
    code = ("import gc, sys\nimport envkit.replay as r\n"
            "r.run = lambda args, finish=None: print(gc.get_threshold()[0]) or 0\n"
            f"sys.argv = ['envkit', {command!r}]\nr.main()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert (done.returncode, done.stdout.strip()) == (0, str(young)), done.stderr


def test_an_entry_whose_parts_do_not_load_is_a_miss(tmp_path: Path) -> None:
    """Each process packs its inputs apart (``packed``); the entry is used whole or not at
    all: a part cut short, or not a part of inputs, is a miss like an unreadable entry."""
    from envkit.replay.store import LSTAT, Answer, Key, identity, load, packed, save

    key, where = Key.now(["validate", "x"]), str(tmp_path / "replay")
    good = packed([(LSTAT, str(tmp_path), identity(str(tmp_path), LSTAT))])
    for parts, found in (((good, good), True), ((good, good[:-3]), False),
                         ((good, marshal.dumps(7)), False), ((b"",), False)):
        save(key, Answer((), parts, ((1, b"out"),), 0), where)
        answer = load(key, where)
        assert (answer is not None) == found, parts
        if answer is not None:
            assert len(answer.inputs) == 2 and answer.stale() == frozenset()
