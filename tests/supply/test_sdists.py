"""Sdist-only dependencies: built into pure wheels on the host and vendored (issue #3).

A loopback PEP 503 index serves a wheel that depends on a project published only as an
sdist; real ``uv pip compile`` resolves it and real ``uv build`` builds it (its in-tree
backend needs no index, so nothing here reaches the internet).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from gymtree_factory import make_gym_tree
from local_index import LocalIndex
from sdistfactory import make_sdist
from wheelfactory import make_wheel

from envkit.builder.build import LOCK_NAME, BuildError, BuildRequest, build
from envkit.model.target import Target
from envkit.supply.sdists import is_pure
from envkit.supply.uvcmd import CompletedRun, run_subprocess


def _request(tmp_path: Path, server: Path, index_url: str) -> BuildRequest:
    return BuildRequest(sources=(server,), out=tmp_path / "out" / "pkg",
                        target=Target("aarch64"), runtime_pins=False, index_url=index_url,
                        cache_dir=tmp_path / "cache")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    folder = tmp_path / "index"
    make_wheel(folder, "grammar-user", "1.0", requires=("pure-runtime==4.9.*",))
    make_sdist(folder, "pure-runtime", "4.9.3")
    return folder


class CountingRunner:
    """The real runner, counting ``uv build`` calls."""

    def __init__(self) -> None:
        self.builds = 0

    def __call__(self, cmd: list[str], *, env: dict[str, str], cwd: Path) -> CompletedRun:
        if cmd[1:3] == ["build", "--wheel"]:
            self.builds += 1
        return run_subprocess(cmd, env=env, cwd=cwd)


def test_sdist_only_dependency_is_vendored_as_a_built_pure_wheel(
    tmp_path: Path, files: Path
) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("grammar-user",))
    sdist = files / "pure_runtime-4.9.3.tar.gz"
    with LocalIndex(files) as index:
        result = build(_request(tmp_path, server, index.url))
    wheels = sorted(p.name for p in (result.out / "wheels").iterdir())
    assert wheels == ["grammar_user-1.0-py3-none-any.whl",
                      "pure_runtime-4.9.3-py3-none-any.whl"]
    lock = json.loads((result.out / LOCK_NAME).read_text())
    built = next(w for w in lock["wheels"] if w["name"] == "pure-runtime")
    assert built["filename"] == "pure_runtime-4.9.3-py3-none-any.whl"
    assert built["sha256"] == hashlib.sha256(
        (result.out / "wheels" / built["filename"]).read_bytes()).hexdigest()
    assert built["built_from"] == {
        "sdist_url": f"{index.url.removesuffix('/simple')}/files/{sdist.name}",
        "sdist_sha256": hashlib.sha256(sdist.read_bytes()).hexdigest()}
    assert built["why"][-2:] == ["grammar-user", "pure-runtime"]
    user = next(w for w in lock["wheels"] if w["name"] == "grammar-user")
    assert "built_from" not in user
    assert result.report.valid, result.report


def test_warm_rebuild_neither_rebuilds_nor_downloads(tmp_path: Path, files: Path) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("grammar-user",))
    runner = CountingRunner()
    with LocalIndex(files) as index:
        request = _request(tmp_path, server, index.url)
        first = build(request, runner=runner)
    assert runner.builds == 1
    wheel = first.out / "wheels" / "pure_runtime-4.9.3-py3-none-any.whl"
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    second = build(request, runner=runner)  # the index is gone: a request would fail
    assert runner.builds == 1
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == digest
    assert second.report.valid


def test_sdist_building_a_platform_wheel_fails_naming_the_project(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    make_sdist(folder, "fast-parser", "2.0", tag="cp311-cp311-linux_x86_64")
    server = make_gym_tree(tmp_path / "gym", "echo", ("fast-parser",))
    with LocalIndex(folder) as index, pytest.raises(BuildError) as err:
        build(_request(tmp_path, server, index.url))
    message = str(err.value)
    assert "fast-parser==2.0" in message
    assert "cannot be cross-built" in message and "--wheels-dir" in message
    assert not (tmp_path / "out" / "pkg").exists()


def test_a_failing_sdist_build_is_a_build_error(tmp_path: Path, files: Path) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("grammar-user",))

    def broken(cmd: list[str], *, env: dict[str, str], cwd: Path) -> CompletedRun:
        if cmd[1:3] == ["build", "--wheel"]:
            return CompletedRun(1, "", "error: Build backend failed: boom")
        return run_subprocess(cmd, env=env, cwd=cwd)

    with LocalIndex(files) as index, \
            pytest.raises(BuildError, match=r"pure-runtime==4\.9\.3.*boom"):
        build(_request(tmp_path, server, index.url), runner=broken)


@pytest.mark.parametrize(("name", "pure"), [
    ("a-1.0-py3-none-any.whl", True), ("a-1.0-py2.py3-none-any.whl", True),
    ("a-1.0-cp313-cp313-manylinux_2_17_x86_64.whl", False), ("a-1.0-cp313-abi3-any.whl", False),
    ("not-a-wheel.tar.gz", False),
])
def test_is_pure(name: str, pure: bool) -> None:
    assert is_pure(name) is pure


def test_compiled_release_is_refused_before_building(tmp_path: Path) -> None:
    """Platform wheels for other targets only: the sdist is not built on the host at all."""
    folder = tmp_path / "index"
    make_sdist(folder, "fast-parser", "2.0", tag="cp311-cp311-linux_x86_64")
    make_wheel(folder, "fast-parser", "2.0", "cp313-cp313-manylinux_2_17_x86_64")
    server = make_gym_tree(tmp_path / "gym", "echo", ("fast-parser",))
    runner = CountingRunner()
    with LocalIndex(folder) as index, pytest.raises(BuildError) as err:
        build(_request(tmp_path, server, index.url), runner=runner)
    assert runner.builds == 0
    assert "fast-parser==2.0" in str(err.value)
    assert "fast_parser-2.0-cp313-cp313-manylinux_2_17_x86_64.whl" in str(err.value)


def test_compiled_sdist_on_an_old_glibc_floor_hints_at_glibc(tmp_path: Path) -> None:
    folder = tmp_path / "index"
    make_sdist(folder, "fast-parser", "2.0", tag="cp313-cp313-linux_x86_64")
    make_wheel(folder, "fast-parser", "2.0", "cp313-cp313-manylinux_2_28_x86_64")
    server = make_gym_tree(tmp_path / "gym", "echo", ("fast-parser",))
    with LocalIndex(folder) as index, pytest.raises(BuildError, match="--glibc 2_28"):
        build(BuildRequest(sources=(server,), out=tmp_path / "out" / "pkg",
                           target=Target("x86_64", glibc=(2, 17)), runtime_pins=False,
                           index_url=index.url, cache_dir=tmp_path / "cache"))


def test_a_built_wheel_someone_else_left_in_the_store_is_built_again(tmp_path: Path) -> None:
    """The store of wheels built from sdists carries no hash to check a hit against: a hit is
    used only when it is this user's own, in folders no one else may write."""
    import os

    from envkit.supply.sdists import build_pure_wheel, sdist_cache_dir

    sha = "ab" * 32
    planted = sdist_cache_dir(tmp_path, sha)
    planted.mkdir(parents=True)
    (planted / "demo-1.0-py3-none-any.whl").write_bytes(b"planted")
    os.chown(planted / "demo-1.0-py3-none-any.whl", 65534, 65534)
    calls: list[list[str]] = []

    class Refused(Exception):
        pass

    def runner(cmd: list[str], **_: object) -> object:
        calls.append(cmd)
        raise Refused

    from envkit.supply.sdists import SdistBuild

    with pytest.raises(Refused):
        build_pure_wheel(tmp_path / "demo-1.0.tar.gz", "demo==1.0", sha, tmp_path,
                         how=SdistBuild(runner=runner))
    assert calls  # not answered from the planted file: a build was started
    assert not planted.exists()


def test_vendoring_does_not_take_a_built_wheel_someone_else_left_in_the_store(
        tmp_path: Path) -> None:
    """The vendoring step looks in the same store before it builds: the same rule holds there
    (a planted wheel named for the sdist's hash is not taken; the sdist is built again)."""
    import hashlib
    import os

    from envkit.supply.downloads import _built_wheel
    from envkit.supply.resolve import PinnedWheel
    from envkit.supply.sdists import SdistBuild, sdist_cache_dir
    from envkit.supply.uvcmd import UvSources
    from envkit.supply.wheelcache import WheelCache

    body = b"demo sdist bytes"
    sha = hashlib.sha256(body).hexdigest()
    cache = WheelCache(tmp_path / "wheels")
    sdist = tmp_path / "demo-1.0.tar.gz"
    sdist.write_bytes(body)
    cache.store(sdist, sha, "demo-1.0.tar.gz")  # the sdist itself: checked by its hash
    planted = sdist_cache_dir(cache.root, sha)
    planted.mkdir(parents=True)
    (planted / "demo-1.0-py3-none-any.whl").write_bytes(b"planted")
    os.chown(planted / "demo-1.0-py3-none-any.whl", 65534, 65534)

    class Refused(Exception):
        pass

    def runner(cmd: list[str], **_: object) -> object:
        raise Refused

    pin = PinnedWheel("demo", "1.0", "demo-1.0.tar.gz", "http://127.0.0.1:1/demo-1.0.tar.gz",
                      sha, ("requirement: demo",), sdist=True)
    how = SdistBuild(sources=UvSources(index_url="http://127.0.0.1:1/simple"), runner=runner)
    with pytest.raises(Refused):  # a build was started, the planted file not returned
        _built_wheel(pin, cache, None, how)
