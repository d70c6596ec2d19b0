"""``WheelFacts``: an unchanged wheel's archive facts come from the store, a changed one is read.

The property pinned here is git's index's: the answer from the store is the answer a fresh read
gives, for as long as the file's stat identity holds, and any write breaks the identity.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from wheelfactory import make_wheel

from envkit.model.wheelfile import read_wheel
from envkit.supply import wheelfacts
from envkit.supply.wheelfacts import WheelFacts
from envkit.validate.validate import read_package


@pytest.fixture(autouse=True)
def _no_racy_window(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file's ctime is always now in a test (no one can set it): every test but the racy
    window's own stores what it reads at once."""
    if "racy" not in request.node.name:
        monkeypatch.setattr(wheelfacts, "RACY_S", 0.0)


def _aged(path: Path, seconds: float = 60.0) -> Path:
    """``path`` with an mtime ``seconds`` ago (its ctime stays now)."""
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


def test_an_unchanged_wheel_is_answered_from_the_store_as_a_fresh_read(tmp_path: Path) -> None:
    wheel = _aged(make_wheel(tmp_path / "w", "demo", requires=("rich>=13", "x; extra == 'y'"),
                             requires_python=">=3.10", extras=("y",)))
    first, second = WheelFacts(tmp_path / "store"), WheelFacts(tmp_path / "store")
    assert first.read(wheel) == read_wheel(wheel) and first.hits == 0
    assert second.read(wheel) == read_wheel(wheel) and second.hits == 1
    assert second.read(wheel, "wheels/elsewhere.whl").path == "wheels/elsewhere.whl"


def test_a_rewritten_wheel_is_read_again_even_with_its_old_size_and_mtime(
    tmp_path: Path,
) -> None:
    wheel = _aged(make_wheel(tmp_path / "w", "demo", requires=("aaaa",)))
    before = wheel.stat()
    facts = WheelFacts(tmp_path / "store")
    assert facts.read(wheel).requires_dist == ("aaaa",)
    other = make_wheel(tmp_path / "other", "demo", requires=("bbbb",))
    wheel.write_bytes(other.read_bytes())  # same length, new bytes
    os.utime(wheel, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert wheel.stat().st_size == before.st_size
    again = WheelFacts(tmp_path / "store")
    assert again.read(wheel).requires_dist == ("bbbb",) and again.hits == 0


def test_a_wheel_changed_within_the_racy_window_is_not_stored(tmp_path: Path) -> None:
    """Neither a fresh write nor an old mtime set just now (the ctime says when)."""
    fresh = make_wheel(tmp_path / "w", "demo")
    backdated = _aged(make_wheel(tmp_path / "w", "other"))
    assert time.time() - backdated.stat().st_ctime < wheelfacts.RACY_S
    WheelFacts(tmp_path / "store").read(fresh)
    WheelFacts(tmp_path / "store").read(backdated)
    assert not list((tmp_path / "store").rglob("*.json"))


def test_hard_links_of_one_wheel_share_one_entry(tmp_path: Path) -> None:
    """envkit links its download store's files into every package: one read serves them all."""
    wheel = make_wheel(tmp_path / "store-of-downloads", "demo", requires=("rich",))
    (tmp_path / "pkg").mkdir()
    linked = tmp_path / "pkg" / wheel.name
    os.link(wheel, linked)
    WheelFacts(tmp_path / "store").read(wheel)
    again = WheelFacts(tmp_path / "store")
    assert again.read(linked, "wheels/x.whl") == read_wheel(linked, "wheels/x.whl")
    assert again.hits == 1 and len(list((tmp_path / "store").rglob("*.json"))) == 1


def test_verify_hashes_reads_every_byte_now(tmp_path: Path) -> None:
    wheel = _aged(make_wheel(tmp_path / "w", "demo"))
    facts = WheelFacts(tmp_path / "store")
    facts.read(wheel)
    facts.read(wheel, deep=True)
    assert facts.hits == 0


def test_a_damaged_entry_is_a_miss_and_is_written_again(tmp_path: Path) -> None:
    wheel = _aged(make_wheel(tmp_path / "w", "demo", requires=("rich",)))
    WheelFacts(tmp_path / "store").read(wheel)
    (entry,) = (tmp_path / "store").rglob("*.json")
    for damage in (b"{not json", b'{"requires_dist": 1}', b"[]"):
        entry.write_bytes(damage)
        facts = WheelFacts(tmp_path / "store")
        assert facts.read(wheel) == read_wheel(wheel) and facts.hits == 0
    assert WheelFacts(tmp_path / "store").read(wheel).requires_dist == ("rich",)


def test_a_store_that_cannot_be_written_costs_only_the_speed(tmp_path: Path) -> None:
    wheel = _aged(make_wheel(tmp_path / "w", "demo"))
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    assert WheelFacts(blocked / "store").read(wheel) == read_wheel(wheel)


def test_an_unreadable_wheel_is_stored_with_its_error(tmp_path: Path) -> None:
    bad = tmp_path / "w" / "demo-1.0-py3-none-any.whl"
    bad.parent.mkdir()
    bad.write_bytes(b"not a zip")
    _aged(bad)
    WheelFacts(tmp_path / "store").read(bad)
    again = WheelFacts(tmp_path / "store")
    assert again.read(bad).error == read_wheel(bad).error and again.hits == 1
    misnamed = tmp_path / "w" / "not-a-wheel.whl"
    misnamed.write_bytes(b"x")
    assert WheelFacts(tmp_path / "store").read(_aged(misnamed)) == read_wheel(misnamed)


def test_validation_reads_a_package_through_the_store(tmp_path: Path, monkeypatch) -> None:
    """The second validation of an unchanged package reads no wheel and sees the same model."""
    monkeypatch.setenv("ENVKIT_CACHE_DIR", str(tmp_path / "cache"))
    pkg = tmp_path / "pkg"
    for name in ("alpha", "beta"):
        _aged(make_wheel(pkg / "wheels", name, requires=("rich",)))
    first, second = read_package(pkg), read_package(pkg)
    assert first.wheels == second.wheels and len(second.wheels) == 2
    assert len(list((tmp_path / "cache" / "wheel-facts").rglob("*.json"))) == 2


def test_an_undecodable_filename_is_keyed_by_its_bytes(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    odd = folder / os.fsdecode(b"demo-1.0-py3-none-any\xff.whl")
    odd.write_bytes(b"x")
    _aged(odd)
    WheelFacts(tmp_path / "store").read(odd)
    again = WheelFacts(tmp_path / "store")
    assert again.read(odd) == read_wheel(odd)


def _ek407(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the EK407 fixture (a wheel whose RECORD does not match), aged."""
    import shutil

    from support.paths import REPO_ROOT

    monkeypatch.setenv("ENVKIT_CACHE_DIR", str(tmp_path / "cache"))
    pkg = Path(shutil.copytree(REPO_ROOT / "fixtures" / "packages" / "EK407-record-hash-mismatch"
                               / "pkg", tmp_path / "pkg"))
    for wheel in (pkg / "wheels").iterdir():
        _aged(wheel)
    return pkg


def _codes(pkg: Path, no_cache: bool = False) -> list[str]:
    from envkit.validate.gate import GateRequest, run_gate

    run = run_gate(GateRequest(paths=(pkg,), no_cache=no_cache))
    return [d.code for r in run.reports for d in r.diagnostics]


def test_an_edited_entry_cannot_make_a_bad_wheel_valid(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Whoever can write the store (here: this very user, as a workspace-local cache lets
    anyone who commits to the repository) edits an entry to say the wheel's RECORD is fine: the
    entry's seal no longer matches, so the wheel is read and EK407 reported."""
    pkg = _ek407(tmp_path, monkeypatch)
    assert "EK407" in _codes(pkg)
    (entry,) = (tmp_path / "cache" / "wheel-facts").rglob("*.json")
    seal, payload = entry.read_bytes().split(b"\n", 1)
    facts = json.loads(payload)
    assert facts["record_issues"]
    facts["record_issues"] = []
    entry.write_bytes(seal + b"\n" + json.dumps(facts).encode())
    assert "EK407" in _codes(pkg)
    entry.write_bytes(json.dumps(facts).encode())  # no seal at all: as planted by hand
    assert "EK407" in _codes(pkg)


def test_no_cache_reads_and_writes_no_wheel_facts(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _ek407(tmp_path, monkeypatch)
    assert "EK407" in _codes(pkg, no_cache=True)
    assert not (tmp_path / "cache").exists()  # nothing written
    assert "EK407" in _codes(pkg)  # a run that keeps facts
    (entry,) = (tmp_path / "cache" / "wheel-facts").rglob("*.json")
    entry.chmod(0o000)  # a store --no-cache must not even open
    opened: list[str] = []
    monkeypatch.setattr(wheelfacts, "load_entry", lambda *a: opened.append("x"))
    assert "EK407" in _codes(pkg, no_cache=True)
    assert opened == []


@pytest.mark.parametrize(("value", "kept"),
                         [("1", False), ("true", False), ("0", True), ("", True)])
def test_envkit_no_cache_holds_for_a_gate_that_did_not_ask(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           value: str, kept: bool) -> None:
    """smoke, probe and submit build their gate's request without ``no_cache``: the variable
    still keeps every store shut, as ``validate --no-cache`` does."""
    pkg = _ek407(tmp_path, monkeypatch)
    monkeypatch.setenv("ENVKIT_NO_CACHE", value)
    assert "EK407" in _codes(pkg)
    assert (tmp_path / "cache" / "wheel-facts").exists() is kept
