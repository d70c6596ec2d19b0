"""Venv set-up progress and the closure key, without building a venv: the prefetch output ->
steps parser, the line reader, the key's inputs, which ready tree a mode may reuse, and the
observers every runtime tells."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path

import pytest
from toy_envs import make_native_package
from wheelfactory import make_wheel

from envkit.gym import GymRuntime, PolicyEndpoint, RuntimeEvents, RuntimeOptions
from envkit.gym.events import Fanout, VenvStep, observers, observing
from envkit.gym.install import (
    building,
    closure_key,
    mark_ready,
    offered_wheels,
    reusable,
    wheel_digests,
)
from envkit.gym.venvsteps import PrefetchSteps, stream_lines
from envkit.model import tree as tree_module
from envkit.supply import cache, treestamps
from envkit.supply.treestamps import MIN_BYTES

# The shape of a real `gym env prefetch` log (nemo-gym 0.7.0, uv 0.9): one built-in server with
# a pyproject (two installs), one requirements.txt server whose downloads were all cached.
PREFETCH_LOG = """\
Pre-warming venv for: /c/gym-venvs/site-packages/responses_api_models/vllm_model
(policy_model) Using CPython 3.13.0 interpreter at: /py/bin/python3.13
(policy_model) Creating virtual environment with seed packages at: /c/v/vllm_model/.venv
(policy_model)  + pip==26.3
(policy_model) Activate with: source /c/v/responses_api_models/vllm_model/.venv/bin/activate
Using Python 3.13.0 environment at: /c/v/responses_api_models/vllm_model/.venv
Resolved 159 packages in 3.29s
Prepared 84 packages in 16.30s
Installed 159 packages in 2.39s
 + aiohttp==3.14.5
(policy_model) Using Python 3.13.0 environment at: /c/v/responses_api_models/vllm_model/.venv
(policy_model) Resolved 180 packages in 2.87s
(policy_model) Prepared 11 packages in 7.43s
(policy_model) Installed 21 packages in 178ms
Pre-warming venv for: /c/runs/run-x/pkg/resources_servers/char_pattern
(char_pattern) Using CPython 3.13.0 interpreter at: /py/bin/python3.13
(char_pattern) Activate with: source /c/v/resources_servers/char_pattern/.venv/bin/activate
(char_pattern) Using Python 3.13.0 environment at: /c/v/resources_servers/char_pattern/.venv
(char_pattern) Resolved 159 packages in 3.87s
(char_pattern) Installed 159 packages in 3.69s
Prefetch complete.
"""


def _steps(text: str) -> list[tuple[str, str | None, str]]:
    got: list[VenvStep] = []
    steps = PrefetchSteps(got.append, clock=iter(range(1000)).__next__)
    for line in text.splitlines(keepends=True):
        steps.line(line)
    steps.finish()
    return [(s.venv, s.step, s.state) for s in got]


def test_prefetch_output_becomes_each_venvs_steps_in_order() -> None:
    model, server = "responses_api_models/vllm_model", "resources_servers/char_pattern"
    cycle = [("resolve", "start"), ("resolve", "done"), ("download", "start"),
             ("download", "done"), ("install", "start"), ("install", "done")]
    assert _steps(PREFETCH_LOG) == [
        (model, "create", "start"), (model, "create", "done"),
        *((model, step, state) for step, state in cycle * 2),
        (server, "create", "start"), (server, "create", "done"),
        # nothing to download: uv printed no "Prepared", the step still ends before install
        *((server, step, state) for step, state in cycle),
    ]


def test_a_done_step_carries_uvs_summary_and_the_venvs_elapsed_time() -> None:
    got: list[VenvStep] = []
    clock = iter([10.0, 11.0, 12.0, 13.0, 14.0, 15.0]).__next__
    steps = PrefetchSteps(got.append, clock=clock)
    steps.line("Pre-warming venv for: /x/resources_servers/a\n")
    steps.line("(a) Using Python 3.13.0 environment at: /v\n")
    steps.line("(a) Resolved 3 packages in 0.1s\n")
    done = next(s for s in got if s.state == "done" and s.step == "resolve")
    assert done.detail == "Resolved 3 packages in 0.1s"
    assert done.venv == "resources_servers/a" and done.seconds > 0


def test_lines_before_the_first_venv_and_unknown_lines_are_ignored() -> None:
    assert _steps("warning: something\nResolved 3 packages in 1s\n") == []
    assert _steps("Pre-warming venv for: /x/a/b\nsomething new from uv\n") == [
        ("a/b", "create", "start"), ("a/b", "create", "done")]


def test_stream_lines_hands_each_line_on_and_returns_the_text() -> None:
    seen: list[str] = []
    text = stream_lines(io.StringIO("a\nb\n"), seen.append, time.monotonic() + 60)
    assert seen == ["a\n", "b\n"]
    assert text == "a\nb\n"


def test_stream_lines_closes_the_stream_it_read_to_its_end() -> None:
    """A subprocess's stdout pipe left to the garbage collector is a ResourceWarning, which
    fails the test that happens to be running when it is collected."""
    stream = io.StringIO("a\n")
    assert stream_lines(stream, lambda line: None, time.monotonic() + 60) == "a\n"
    deadline = time.monotonic() + 5
    while not stream.closed and time.monotonic() < deadline:  # the reader closes it at EOF
        time.sleep(0.01)
    assert stream.closed


def test_stream_lines_gives_up_at_the_deadline() -> None:
    read, write = os.pipe()  # not closed until the call returned: the stream has not ended
    with os.fdopen(read) as stream:
        try:
            assert stream_lines(stream, lambda line: None, time.monotonic() - 1) is None
        finally:
            os.close(write)  # the reader thread sees the end (as after the tree is killed)


def _wheels_package(root: Path) -> Path:
    pkg = make_native_package(root)
    manifest = pkg / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text().replace("native-v1", "wheels-v1"))
    make_wheel(pkg / "wheels", "envkit-toy-scorer", "1.0",
               files={"envkit_toy_scorer/__init__.py": b"SCALE = 1\n"})
    return pkg


def _key(pkg: Path) -> str:
    return closure_key(pkg, "wheels-v1", ["configs/char_pattern.yaml"], "0.7.0", "3.13.0")


def test_the_closure_key_follows_what_the_venvs_hold_not_the_rest(tmp_path: Path) -> None:
    pkg = _wheels_package(tmp_path / "p")
    key = _key(pkg)
    assert key == _key(pkg)
    assert key != closure_key(pkg, "wheels-v1", [], "0.7.0", "3.13.14")  # the interpreter
    (pkg / "resources_servers/char_pattern/app.py").write_text("# no install reads this\n")
    (pkg / "README.md").write_text("docs\n")
    assert _key(pkg) == key
    make_wheel(pkg / "wheels", "envkit-toy-scorer", "1.0",  # same name and version, new bytes
               files={"envkit_toy_scorer/__init__.py": b"SCALE = 2\n"})
    assert _key(pkg) != key


def test_kept_wheel_hashes_give_the_same_key_and_read_no_unchanged_wheel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the wheels' digests from kept stamps the key is the one every byte gives; a second
    start reads no wheel whose stat is unchanged, for the key nor for offering the wheels to uv,
    and a rewritten wheel is read again and moves the key."""
    monkeypatch.setattr(treestamps, "RACY_S", 0.0)  # no one can set a ctime: it is now here
    pkg = _wheels_package(tmp_path / "p")
    big = pkg / "wheels" / "envkit_big-1.0-py3-none-any.whl"
    big.write_bytes(b"\1" * (MIN_BYTES + 1))  # kept stamps are for files worth a stat
    for wheel in (pkg / "wheels").iterdir():
        os.utime(wheel, ns=(time.time_ns() - 60 * 10**9,) * 2)  # older than the racy window
    stamps = tmp_path / "stamps"
    key = _key(pkg)
    assert _stamped_key(pkg, stamps) == key

    read: list[str] = []
    real = tree_module.sha256_file
    for module in (tree_module, cache):  # every reader of a file's bytes, counted
        monkeypatch.setattr(module, "sha256_file",
                            lambda path: read.append(str(path)) or real(path))
    cache._sha256_of.cache_clear()  # as in the next process: this one's memo is gone
    assert _stamped_key(pkg, stamps) == key
    offered = offered_wheels("wheels-v1", pkg / "wheels", tmp_path / "cache",
                             wheel_digests(pkg / "wheels", stamps))
    assert sorted(p.read_bytes() for p in offered) == sorted(
        p.read_bytes() for p in (pkg / "wheels").iterdir())
    assert not any(path.endswith("envkit_big-1.0-py3-none-any.whl") for path in read)

    big.write_bytes(b"\2" * (MIN_BYTES + 1))
    os.utime(big, ns=(time.time_ns() - 30 * 10**9,) * 2)
    assert _stamped_key(pkg, stamps) == _key(pkg) != key


def _stamped_key(pkg: Path, stamps: Path) -> str:
    return closure_key(pkg, "wheels-v1", ["configs/char_pattern.yaml"], "0.7.0", "3.13.0",
                       wheels=wheel_digests(pkg / "wheels", stamps))


def test_a_changed_requirement_changes_the_key(tmp_path: Path) -> None:
    pkg = _wheels_package(tmp_path / "p")
    key = _key(pkg)
    req = pkg / "resources_servers/char_pattern/requirements.txt"
    req.write_text(req.read_text() + "envkit-toy-scorer==1.0\n")
    assert _key(pkg) != key


_CONFIG = "resources_servers/char_pattern/configs/char_pattern.yaml"


def _config_key(pkg: Path) -> str:
    return closure_key(pkg, "native-v1", [_CONFIG], "0.7.0", "3.13.0")


def test_a_server_blocks_own_fields_keep_the_key_the_server_set_does_not(
        tmp_path: Path) -> None:
    """Gym's install reads which servers a config names and its top-level settings, never a
    server block's fields: a new description keeps the venvs, a new server or setting not."""
    pkg = make_native_package(tmp_path / "p")
    config = pkg / _CONFIG
    text = config.read_text()
    key = _config_key(pkg)
    config.write_text(text.replace("entrypoint: app.py", "entrypoint: app.py\n"
                                   "      description: a new description", 1))
    assert _config_key(pkg) == key
    other = make_native_package(tmp_path / "q")  # another package, the same servers
    (other / "nemo-environment.yaml").write_text(
        (other / "nemo-environment.yaml").read_text().replace("char-pattern", "renamed"))
    assert _config_key(other) == key
    config.write_text(text + "python_version: '3.13'\n")  # a global key Gym's install reads
    assert _config_key(pkg) != key
    config.write_text(text + "extra_server:\n  resources_servers:\n    other_impl:\n"
                      "      entrypoint: app.py\n")
    assert _config_key(pkg) != key
    config.write_text("{unbalanced: [\n")  # not YAML: counted by its bytes
    broken = _config_key(pkg)
    assert broken != key
    config.write_text("{unbalanced: [ \n")
    assert _config_key(pkg) != broken


def test_two_runs_building_the_same_tree_take_turns(tmp_path: Path) -> None:
    tree = tmp_path / "server-venvs" / "k"
    inside: list[int] = []
    overlap: list[bool] = []

    def build(n: int) -> None:
        with building(tree):
            inside.append(n)
            overlap.append(len(inside) > 1)
            time.sleep(0.2)
            inside.remove(n)

    threads = [threading.Thread(target=build, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlap == [False, False, False]
    assert (tmp_path / "server-venvs" / "k.lock").exists() and not tree.exists()


def test_an_offline_built_tree_serves_both_modes_an_online_one_only_online(
        tmp_path: Path) -> None:
    offline, online = tmp_path / "a", tmp_path / "b"
    for tree, built_offline in ((offline, True), (online, False)):
        tree.mkdir()
        assert not reusable(tree, offline=False)
        mark_ready(tree, tmp_path, offline=built_offline)
    assert reusable(offline, offline=True) and reusable(offline, offline=False)
    assert reusable(online, offline=False)
    assert not reusable(online, offline=True)  # only an index-free build proves wheels/


class _Seen(RuntimeEvents):
    def __init__(self) -> None:
        self.steps: list[VenvStep] = []

    def on_venv(self, step: VenvStep) -> None:
        self.steps.append(step)


def test_every_runtime_tells_its_callers_events_then_the_observers(tmp_path: Path) -> None:
    pkg = make_native_package(tmp_path / "p")
    mine, watcher = _Seen(), _Seen()
    endpoint = PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m")
    with observing(watcher):
        assert observers() == (watcher,)
        runtime = GymRuntime(pkg, endpoint, RuntimeOptions(), mine)
    assert observers() == ()
    assert isinstance(runtime.events, Fanout)
    step = VenvStep("gym", None, "cached")
    runtime.events.on_venv(step)
    assert mine.steps == [step] and watcher.steps == [step]
