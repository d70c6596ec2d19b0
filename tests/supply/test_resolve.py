"""envkit.supply.resolve, uvcmd, wheelcache, downloads: uv command lines, env isolation, lock
parsing, caches (no network)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from wheelfactory import make_wheel

from envkit.model.target import Target
from envkit.supply.downloads import FetchError, vendor_pins
from envkit.supply.resolve import (
    PinnedWheel,
    ResolutionCache,
    ResolveError,
    parse_annotations,
    parse_pylock,
    resolve_closure,
)
from envkit.supply.uvcmd import CompletedRun, UvSources, clean_env, compile_command
from envkit.supply.wheelcache import WheelCache

AARCH64 = Target("aarch64")

PYLOCK = """\
lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.13"

[[packages]]
name = "PyYAML"
version = "6.0.4"
wheels = [
  { url = "https://f.example/pyyaml-6.0.4-py3-none-any.whl", hashes = { sha256 = "aa" } },
  { url = "https://f.example/pyyaml-6.0.4-cp313-cp313-manylinux_2_17_aarch64.whl", \
hashes = { sha256 = "bb" } },
]

[[packages]]
name = "anyio"
version = "4.16.0"
wheels = [{ url = "https://f.example/anyio-4.16.0-py3-none-any.whl", hashes = { sha256 = "cc" } }]

[[packages]]
name = "httpx"
version = "0.28.1"
wheels = [{ url = "https://f.example/httpx-0.28.1-py3-none-any.whl", hashes = { sha256 = "dd" } }]
"""

ANNOTATED = """\
anyio==4.16.0
    # via httpx
httpx==0.28.1
    # via -r requirements.in
pyyaml==6.0.4
    # via
    #   -r requirements.in
    #   httpx
"""


class Recorder:
    """Records uv invocations and answers them with canned output (STYLE: no uv in unit tests)."""

    def __init__(self, *outputs: CompletedRun) -> None:
        self.outputs = list(outputs)
        self.calls: list[tuple[list[str], dict[str, str], Path]] = []

    def __call__(self, cmd, *, env, cwd):
        self.calls.append((list(cmd), dict(env), cwd))
        assert (cwd / "requirements.in").is_file()
        return self.outputs.pop(0)


def _ok(text: str) -> CompletedRun:
    return CompletedRun(0, text, "")


def test_compile_command_targets_the_cluster_not_the_host(tmp_path: Path) -> None:
    sources = UvSources(extra_index_urls=["https://extra/simple"], find_links=[tmp_path],
                        offline=True)
    cmd = compile_command("uv", AARCH64, sources, output_format="pylock.toml")
    joined = " ".join(cmd)
    assert "--python-platform aarch64-manylinux_2_28" in joined
    assert "--python-version 3.13" in joined
    assert "--only-binary" not in cmd  # it silently backtracked past sdist-only deps (#3)
    assert "--no-config" in cmd and "--offline" in cmd
    assert f"--find-links {tmp_path.resolve()}" in joined
    assert "--index-url https://pypi.org/simple --extra-index-url https://extra/simple" in joined
    glibc = compile_command("uv", Target("x86_64", glibc=(2, 34)), UvSources(),
                            output_format="pylock.toml")
    assert "x86_64-manylinux_2_34" in glibc


def test_clean_env_drops_user_pip_and_uv_configuration() -> None:
    env = clean_env({"PATH": "/bin", "UV_INDEX_URL": "http://evil", "PIP_FIND_LINKS": "/opt",
                     "PIP_CONSTRAINT": "/c.txt", "SSL_CERT_FILE": "/ca.pem", "HOME": "/h"})
    assert not any(k.startswith("UV_") and k != "UV_NO_CONFIG" for k in env)
    assert env["PIP_CONFIG_FILE"] == "/dev/null"
    assert "PIP_FIND_LINKS" not in env and "PIP_CONSTRAINT" not in env
    assert env["SSL_CERT_FILE"] == "/ca.pem"


def test_parse_annotations_reads_single_and_multi_line_via() -> None:
    via = parse_annotations(ANNOTATED)
    assert via == {"anyio": ("httpx",), "httpx": ("-r requirements.in",),
                   "pyyaml": ("-r requirements.in", "httpx")}


def test_parse_pylock_keeps_the_wheel_the_target_prefers() -> None:
    pins = parse_pylock(PYLOCK, Path("/"), AARCH64.tags())
    by_name = {p.name: p for p in pins}
    assert "manylinux_2_17_aarch64" in by_name["pyyaml"].filename
    assert by_name["pyyaml"].sha256 == "bb"


def test_parse_pylock_lists_a_wheel_less_release_by_its_sdist() -> None:
    text = ('lock-version = "1.0"\n[[packages]]\nname = "antlr4-python3-runtime"\n'
            'version = "4.9.3"\nsdist = { url = "https://files/antlr4-python3-runtime-4.9.3'
            '.tar.gz", hashes = { sha256 = "cc" } }\n')
    pins = parse_pylock(text, Path("/"), AARCH64.tags())
    assert pins == [PinnedWheel("antlr4-python3-runtime", "4.9.3",
                                "antlr4-python3-runtime-4.9.3.tar.gz",
                                "https://files/antlr4-python3-runtime-4.9.3.tar.gz", "cc", (),
                                sdist=True)]


def test_target_tags_respect_arch_and_glibc_floor() -> None:
    tags = {str(t) for t in AARCH64.tags()}
    assert "cp313-cp313-manylinux_2_28_aarch64" in tags
    assert "cp313-cp313-manylinux_2_29_aarch64" not in tags
    assert "py3-none-any" in tags and "cp311-abi3-manylinux_2_17_aarch64" in tags
    assert not any("x86_64" in t for t in tags)


def test_resolve_closure_records_isolated_uv_calls_and_requested_by(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UV_INDEX_URL", "http://user-config.invalid/simple")
    monkeypatch.setenv("PIP_INDEX_URL", "http://user-config.invalid/simple")
    runner = Recorder(_ok(PYLOCK), _ok(ANNOTATED))
    pins = resolve_closure(["httpx>=0.27", "pyyaml"], AARCH64, runner=runner)
    (lock_cmd, env, _), (notes_cmd, _, _) = runner.calls
    assert "pylock.toml" in lock_cmd and "--offline" not in lock_cmd
    assert "requirements.txt" in notes_cmd and "--offline" in notes_cmd
    assert "UV_INDEX_URL" not in env and "PIP_INDEX_URL" not in env
    by_name = {p.name: p for p in pins}
    assert by_name["httpx"].requested_by == ("requirement: httpx>=0.27",)
    assert by_name["pyyaml"].requested_by == ("requirement: pyyaml", "httpx")
    assert by_name["anyio"].requested_by == ("httpx",)
    assert [p.name for p in pins] == ["anyio", "httpx", "pyyaml"]


def test_resolution_cache_hit_runs_no_uv(tmp_path: Path) -> None:
    cache = ResolutionCache(tmp_path / "res")
    first = resolve_closure(["httpx"], AARCH64, runner=Recorder(_ok(PYLOCK), _ok(ANNOTATED)),
                            cache=cache)
    silent = Recorder()
    assert resolve_closure(["httpx"], AARCH64, runner=silent, cache=cache) == first
    assert silent.calls == []
    other_target = Recorder(_ok(PYLOCK), _ok(ANNOTATED))
    resolve_closure(["httpx"], Target("x86_64"), runner=other_target, cache=cache)
    assert len(other_target.calls) == 2


def test_resolution_cache_key_changes_with_find_links_contents(tmp_path: Path) -> None:
    cache = ResolutionCache(tmp_path / "res")
    links = tmp_path / "links"
    make_wheel(links, "a", "1.0")
    before = cache.key(["a"], AARCH64, ["idx"], [links])
    make_wheel(links, "a", "2.0")
    assert cache.key(["a"], AARCH64, ["idx"], [links]) != before


def test_uv_failure_is_a_resolve_error_with_uvs_reason() -> None:
    failing = Recorder(CompletedRun(1, "", "warning: x\nerror: No solution found\n"
                                    "  hint: no wheels with a matching platform tag"))
    with pytest.raises(ResolveError, match="matching platform tag") as info:
        resolve_closure(["torch"], AARCH64, runner=failing)
    assert "cp313-manylinux_2_28_aarch64" in str(info.value)


def _pin(path: Path, sha: str | None = None) -> PinnedWheel:
    digest = sha or hashlib.sha256(path.read_bytes()).hexdigest()
    return PinnedWheel("a", "1.0", path.name, path.as_uri(), digest, ("requirement: a",))


def test_vendor_pins_verifies_caches_and_serves_warm_without_the_source(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "src", "a", "1.0")
    cache = WheelCache(tmp_path / "cache")
    pin = _pin(wheel)
    assert vendor_pins([pin], tmp_path / "out1", cache=cache) == [pin]
    got = tmp_path / "out1" / wheel.name
    assert got.read_bytes() == wheel.read_bytes()
    wheel.unlink()  # the "network" is gone: a warm fetch must not need it
    vendor_pins([pin], tmp_path / "out2", cache=cache)
    assert (tmp_path / "out2" / wheel.name).read_bytes() == got.read_bytes()


def test_vendor_pins_rejects_a_hash_mismatch_and_caches_nothing(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "src", "a", "1.0")
    cache = WheelCache(tmp_path / "cache")
    with pytest.raises(FetchError, match="sha256 mismatch"):
        vendor_pins([_pin(wheel, "0" * 64)], tmp_path / "out", cache=cache)
    assert not list((tmp_path / "cache").rglob("*.whl"))
    assert not list((tmp_path / "out").glob("*.whl"))


def test_vendor_pins_reports_an_unreachable_url(tmp_path: Path) -> None:
    name = "a-1.0-py3-none-any.whl"
    pin = PinnedWheel("a", "1.0", name, "http://127.0.0.1:9/a.whl", "0" * 64, ())
    with pytest.raises(FetchError, match=re.escape(f"could not download {name}")):
        vendor_pins([pin], tmp_path / "out", cache=WheelCache(tmp_path / "cache"))


def test_refresh_bypasses_a_cached_resolution_and_replaces_it(tmp_path: Path) -> None:
    cache = ResolutionCache(tmp_path / "res")
    resolve_closure(["httpx"], AARCH64, runner=Recorder(_ok(PYLOCK), _ok(ANNOTATED)),
                    cache=cache)
    newer = PYLOCK.replace('version = "0.28.1"', 'version = "0.29.0"')
    again = Recorder(_ok(newer), _ok(ANNOTATED))
    pins = resolve_closure(["httpx"], AARCH64, runner=again, cache=cache, refresh=True)
    assert len(again.calls) == 2
    assert {p.version for p in pins if p.name == "httpx"} == {"0.29.0"}
    assert resolve_closure(["httpx"], AARCH64, runner=Recorder(), cache=cache) == pins


def test_resolution_cache_key_changes_with_the_resolver_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries pinned under --only-binary :all: (hydra-core 0.11.3) must not be reused."""
    import envkit.supply.resolve as resolve_module

    cache = ResolutionCache(tmp_path)
    before = cache.key(["hydra-core>=1.1"], AARCH64, ["https://pypi.org/simple"], [])
    monkeypatch.setattr(resolve_module, "_RESOLVER_MODE", "only-binary")
    assert cache.key(["hydra-core>=1.1"], AARCH64, ["https://pypi.org/simple"], []) != before
