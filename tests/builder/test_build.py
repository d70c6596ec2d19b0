"""envkit build / convert package with real uv, against local wheels and a loopback index.

No test here reaches the internet: closures come from ``--wheels-dir`` folders (uv
``--offline``) or from a PEP 503 index on 127.0.0.1 (fixtures/local_index.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from gymtree_factory import make_gym_tree
from local_index import LocalIndex
from support.paths import REPO_ROOT
from wheelfactory import make_wheel

from envkit.builder.build import LOCK_NAME, BuildError, BuildRequest, build, convert_package
from envkit.cli import main
from envkit.model.target import Target
from envkit.supply.uvcmd import CompletedRun

ROOT = REPO_ROOT
NATIVE = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def links(tmp_path: Path) -> Path:
    folder = tmp_path / "links"
    make_wheel(folder, "echo-scorer", "1.0", requires=("echo-helper>=1",))
    make_wheel(folder, "echo-helper", "1.0")
    make_wheel(folder, "fast-ext", "1.0", "cp313-cp313-manylinux_2_17_aarch64")
    make_wheel(folder, "fast-ext", "1.0", "cp313-cp313-manylinux_2_17_x86_64")
    return folder


def _request(tmp_path: Path, server: Path, links: Path, **kw: object) -> BuildRequest:
    base = {"sources": (server,), "out": tmp_path / "out" / "pkg", "target": Target("aarch64"),
            "wheels_dirs": (links,), "runtime_pins": False, "resolve_offline": True,
            "cache_dir": tmp_path / "cache"}
    return BuildRequest(**{**base, **kw})  # type: ignore[arg-type]


def test_build_wheels_v1_vendors_the_target_closure_and_a_lock(tmp_path: Path, links: Path) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer", "fast-ext"))
    result = build(_request(tmp_path, server, links))
    out = result.out
    wheels = sorted(p.name for p in (out / "wheels").iterdir())
    assert wheels == ["echo_helper-1.0-py3-none-any.whl", "echo_scorer-1.0-py3-none-any.whl",
                      "fast_ext-1.0-cp313-cp313-manylinux_2_17_aarch64.whl"]
    lock = json.loads((out / LOCK_NAME).read_text())
    helper = next(w for w in lock["wheels"] if w["name"] == "echo-helper")
    assert helper["why"] == ["echo-scorer", "echo-scorer", "echo-helper"]
    assert helper["sha256"] == hashlib.sha256((out / "wheels" / helper["filename"])
                                              .read_bytes()).hexdigest()
    assert lock["requirements"][0]["from"] == ["resources_servers/echo/requirements.txt"]
    assert not list(out.rglob("*.jsonl"))
    data = result.dataset_dir
    assert data == tmp_path / "out" / "pkg-data"
    assert (data / "training.jsonl").is_file()
    assert (data / "resources_servers/echo/data/example.jsonl").is_file()
    assert result.report.valid


def test_rebuild_keeps_no_stale_versions(tmp_path: Path, links: Path) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-helper==1.0",))
    build(_request(tmp_path, server, links))
    make_wheel(links, "echo-helper", "2.0")
    (server / "requirements.txt").write_text("echo-helper==2.0\n")
    result = build(_request(tmp_path, server, links))
    assert [p.name for p in (result.out / "wheels").iterdir()] == [
        "echo_helper-2.0-py3-none-any.whl"]


def test_failing_build_leaves_previous_output_and_no_temp_dirs(
    tmp_path: Path, links: Path
) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer",))
    first = build(_request(tmp_path, server, links))
    before = tree_digest(first.out)
    (server / "requirements.txt").write_text("does-not-exist==9\n")
    with pytest.raises(BuildError, match="uv could not resolve"):
        build(_request(tmp_path, server, links))
    assert tree_digest(first.out) == before
    assert not list(first.out.parent.glob(".envkit-tmp-*"))


def test_stale_temp_dirs_of_killed_builds_are_removed(tmp_path: Path, links: Path) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer",))
    parent = tmp_path / "out"
    stale = parent / ".envkit-tmp-pkg-999999999-abc_1234"
    (stale / "wheels").mkdir(parents=True)
    build(_request(tmp_path, server, links))
    assert not stale.exists()


def test_foreign_output_directory_is_never_replaced(tmp_path: Path, links: Path) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer",))
    out = tmp_path / "out" / "pkg"
    out.mkdir(parents=True)
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(BuildError, match="not an environment package"):
        build(_request(tmp_path, server, links))
    assert (out / "thesis.tex").read_text() == "precious"


def test_resolver_never_sees_user_configuration(
    tmp_path: Path, links: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user UV_/PIP_ config pointing at a dead index must not change the build."""
    monkeypatch.setenv("UV_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("UV_FIND_LINKS", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PIP_CONSTRAINT", str(tmp_path / "nope.txt"))
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer",))
    assert build(_request(tmp_path, server, links)).report.valid


def test_native_v1_build_ships_no_wheels_and_runs_no_resolver(tmp_path: Path) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("anything-at-all",))

    def refuse(*_a: object, **_k: object) -> CompletedRun:
        raise AssertionError("native-v1 must not resolve")

    result = build(_request(tmp_path, server, tmp_path, fmt="native-v1"), runner=refuse)
    assert not (result.out / "wheels").exists()
    assert (result.out / "responses_api_models/vllm_model/configs/policy_model.yaml").is_file()


def test_convert_native_package_to_wheels_v1(tmp_path: Path) -> None:
    links = tmp_path / "links"
    make_wheel(links, "nemo-gym", "0.7.0", requires=("openai==2.44.0",),
               requires_python=">=3.13.14")
    make_wheel(links, "openai", "2.44.0")
    make_wheel(links, "ray", "2.60.0", extras=("default",),
               requires=("aiohttp; extra == 'default'",))
    make_wheel(links, "aiohttp", "3.14.5")
    make_wheel(links, "pip", "26.0")
    make_wheel(links, "setuptools", "80.9.0")  # to build Gym's built-in vllm_model offline
    make_wheel(links, "setuptools-scm", "9.2.2")
    request = BuildRequest(sources=(NATIVE,), out=tmp_path / "pkg", target=Target("x86_64"),
                           wheels_dirs=(links,), resolve_offline=True, cache_dir=tmp_path / "c")
    result = convert_package(request)
    manifest = (result.out / "nemo-environment.yaml").read_text()
    assert "format: wheels-v1" in manifest
    names = sorted(p.name.split("-")[0] for p in (result.out / "wheels").iterdir())
    # pip: the venv seed; setuptools(-scm): the editable build of the built-in vllm_model
    assert names == ["aiohttp", "nemo_gym", "openai", "pip", "ray", "setuptools", "setuptools_scm"]
    assert result.report.valid
    lock = json.loads((result.out / LOCK_NAME).read_text())
    assert lock["python_version"] == "3.13.14"
    assert (result.out / "resources_servers/echo_match/app.py").is_file()


def test_cli_build_prints_the_verdict_json_on_stdout(
    tmp_path: Path, links: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer",))
    rc = main(["build", str(server), "--arch", "aarch64", "-o", str(tmp_path / "pkg"),
               "--wheels-dir", str(links), "--no-runtime-pins", "--resolve-offline"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    verdict = json.loads(out)
    assert verdict["valid"] is True and verdict["format"] == "wheels-v1"
    assert verdict["target"] == "cp313-manylinux_2_28_aarch64"
    assert "resolving" in err


def test_cli_build_verdict_says_where_its_target_came_from(
    tmp_path: Path, links: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--arch`` is the command line's target; without target flags it is the default."""
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer",))
    common = ["--wheels-dir", str(links), "--no-runtime-pins", "--resolve-offline"]
    sources = []
    for out, flags in (("a", ["--arch", "aarch64"]), ("b", ["--glibc", "2_28"]), ("c", [])):
        rc = main(["build", str(server), *flags, "-o", str(tmp_path / out), *common])
        verdict, err = capsys.readouterr()
        assert rc == 0, err
        (package,) = json.loads(verdict)["packages"]
        sources.append(package["target_source"])
    assert sources == ["command line", "command line", "default"]


def test_cli_bad_source_is_a_usage_error_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["build", str(tmp_path), "-o", str(tmp_path / "pkg")])
    _out, err = capsys.readouterr()
    assert rc == 2
    assert "neither a Gym server directory" in err and "Traceback" not in err


def test_loopback_index_warm_rebuild_makes_no_request(tmp_path: Path, links: Path) -> None:
    """Second build with the index shut down: resolution and files come from the caches."""
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer", "fast-ext"))
    with LocalIndex(links) as index:
        request = _request(tmp_path, server, links, wheels_dirs=(), resolve_offline=False,
                           index_url=index.url)
        first = build(request)
        assert any(r.startswith("/files/") for r in index.requests)
    digest = tree_digest(first.out)
    second = build(request)  # the index is gone: any request would fail the build
    assert tree_digest(second.out) == digest


def test_killed_build_leaves_previous_output_untouched(tmp_path: Path, links: Path) -> None:
    """SIGKILL during a download: OUT is unchanged; the next run removes the temp dir."""
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer", "fast-ext"))
    out = tmp_path / "out" / "pkg"
    env = {**os.environ, "ENVKIT_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "envkit", "build", str(server), "--arch", "aarch64", "-o",
           str(out), "--no-runtime-pins"]
    subprocess.run([*cmd, "--wheels-dir", str(links), "--resolve-offline"], env=env,
                   check=True, capture_output=True)
    before = tree_digest(out)
    make_wheel(links, "echo-scorer", "1.1", requires=("echo-helper>=1",), files={
        "echo_scorer/blob.bin": os.urandom(64 * 1024)})
    with LocalIndex(links, throttle=0.05) as index:
        proc = subprocess.Popen([*cmd, "--index-url", index.url],
                                env={**env, "ENVKIT_CACHE_DIR": str(tmp_path / "cold")},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert index.fetch_requested.wait(60), "the build never started downloading"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert tree_digest(out) == before
    assert list(out.parent.glob(".envkit-tmp-*")), "a killed build leaves its temp dir"
    subprocess.run([*cmd, "--wheels-dir", str(links), "--resolve-offline"], env=env,
                   check=True, capture_output=True)
    assert not list(out.parent.glob(".envkit-tmp-*"))


def test_no_wheels_for_an_old_glibc_floor_hints_at_glibc(tmp_path: Path, links: Path) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer",))
    uv_says = CompletedRun(1, "", "error: No solution found\n  pyarrow has no usable wheels")

    def runner(*_a: object, **_k: object) -> CompletedRun:
        return uv_says

    with pytest.raises(BuildError, match="--glibc 2_28"):
        old_floor = Target("x86_64", glibc=(2, 17))
        build(_request(tmp_path, server, links, target=old_floor), runner=runner)


def test_cli_convert_package_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    links = tmp_path / "links"
    make_wheel(links, "nemo-gym", "0.7.0", requires_python=">=3.13.14")
    rc = main(["convert", "package", str(NATIVE), "--to", "wheels-v1", "--arch", "aarch64",
               "-o", str(tmp_path / "pkg"), "--wheels-dir", str(links), "--no-runtime-pins",
               "--resolve-offline"])
    _out, err = capsys.readouterr()
    assert rc == 2  # the fixture's server needs nothing but nemo-gym: nothing to vendor
    assert "nothing to vendor" in err
    assert not (tmp_path / "pkg").exists()


def test_dataset_dir_option_and_foreign_dataset_dir(tmp_path: Path, links: Path) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer",))
    rows = tmp_path / "rows"
    result = build(_request(tmp_path, server, links, dataset_dir=rows))
    assert result.dataset_dir == rows and (rows / "training.jsonl").is_file()
    (rows / "notes.md").write_text("mine")
    with pytest.raises(BuildError, match="--dataset-dir"):
        build(_request(tmp_path, server, links, dataset_dir=rows))
    assert (rows / "notes.md").read_text() == "mine"


@pytest.mark.parametrize(("out", "data"), [("gym/resources_servers/echo/pkg", None),
                                           ("pkg", "pkg/rows")])
def test_outputs_nested_in_sources_or_package_are_refused(
    tmp_path: Path, links: Path, out: str, data: str | None
) -> None:
    server = make_gym_tree(tmp_path / "gym", "echo", ("echo-scorer",))
    request = _request(tmp_path, server, links, out=tmp_path / out,
                       dataset_dir=tmp_path / data if data else None)
    with pytest.raises(BuildError, match="must not be inside"):
        build(request)
