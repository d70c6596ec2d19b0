"""A tree's run after some of its packages changed: those are validated again, the others are
answered from the last run, and the output is byte for byte what a fresh run prints; anything
else that changed (a settings file above the packages, a variable, a module) runs them all.

The end-to-end tests run the real entry (``python -m envkit``) on a tree of ``MEMO_ITEMS``
packages; a ``sitecustomize`` on ``PYTHONPATH`` wraps the gate's per-package function to write
each package it validates to a pipe the test reads (a write to an inherited descriptor is no
input and no impurity to the recorder), so a test sees which packages ran, in whichever process.
"""

from __future__ import annotations

import marshal
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.check.workers import MEMO_ITEMS
from envkit.replay import RACY_NS
from envkit.replay.store import LISTED, LSTAT, STAT, Answer, identity, packed

PACKAGES = REPO_ROOT / "fixtures" / "packages"
NAMES = ("config", "added", "removed", "settings", "nested", "twice", "again", "invalid")
COUNTER = """\
import os

import envkit.check.gate as gate

_fd = int(os.environ["ENVKIT_TEST_RAN_FD"])
_one = gate._one


def _counted(package, *args):
    os.write(_fd, f"{package}\\n".encode())
    return _one(package, *args)


gate._one = _counted
"""
CONFIG = Path("resources_servers") / "echo_match" / "configs" / "echo_match.yaml"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """One tree of ``MEMO_ITEMS`` packages per test (valid ones, and two invalid ones in the
    "invalid" tree), older than the racy window; the counter module beside them."""
    root = tmp_path_factory.mktemp("items")
    found = {}
    for name in NAMES:
        pkgs = []
        for i in range(MEMO_ITEMS):
            source = ("EK102-metadata-typo" if name == "invalid" and i in (3, 11)
                      else "valid-native-v1")
            pkgs.append(Path(shutil.copytree(PACKAGES / source / "pkg",
                                             root / name / "tree" / f"p{i:02d}")))
        found[name] = pkgs
    nested = found["nested"][4] / "inner"  # a package inside another, both named
    shutil.copytree(PACKAGES / "valid-native-v1" / "pkg", nested)
    found["nested"].append(nested)
    link = root / "twice" / "link"  # the first package again, by another path
    link.symlink_to(found["twice"][0])
    found["twice"].append(link)
    (root / "counter").mkdir()
    (root / "counter" / "sitecustomize.py").write_text(COUNTER)
    time.sleep(RACY_NS / 1e9 + 0.2)
    return found


def _run(pkgs: list[Path], store: Path, *extra: str,
         **env: str) -> tuple[subprocess.CompletedProcess[bytes], list[str]]:
    """``envkit validate PKGS --offline --output-format json EXTRA``: the process, and the
    packages it validated (not answered from the store), sorted."""
    counter = pkgs[0].parent.parent.parent / "counter"
    read, write = os.pipe()
    environ = {k: v for k, v in os.environ.items() if k not in ("ENVKIT_NO_CACHE", "PYTHONPATH")}
    environ.update(ENVKIT_CACHE_DIR=str(store), PYTHONPATH=str(counter),
                   ENVKIT_TEST_RAN_FD=str(write), **env)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "envkit", "validate", *map(str, pkgs), "--offline",
             "--output-format", "json", *extra],
            capture_output=True, env=environ, check=False, timeout=120, pass_fds=(write,))
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as pipe:
        ran = sorted(pipe.read().decode().split())
    return done, ran


def _fresh(pkgs: list[Path], store: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return _run(pkgs, store, "--no-cache", **env)[0]


def _stored(pkgs: list[Path], store: Path) -> Answer:
    first, ran = _run(pkgs, store)
    assert first.returncode in (0, 1), first.stderr.decode()
    assert ran == sorted(map(str, pkgs))
    [entry] = (store / "replay").glob("*.marshal")
    _, _, env, parts, chunks, status, items = marshal.loads(entry.read_bytes())
    return Answer(env, parts, chunks, status, items)


def _same_as_fresh(done: subprocess.CompletedProcess[bytes], pkgs: list[Path],
                   store: Path) -> None:
    fresh = _fresh(pkgs, store)
    assert (done.returncode, done.stdout, done.stderr) == (
        fresh.returncode, fresh.stdout, fresh.stderr)


@pytest.mark.parametrize(("name", "change"), [
    ("config", lambda pkg: (pkg / CONFIG).write_text((pkg / CONFIG).read_text()
                                                     + "  oops: [\n")),
    ("added", lambda pkg: (pkg / "resources_servers" / "echo_match" / "notes.md")
     .write_text("new\n")),
    ("removed", lambda pkg: (pkg / "resources_servers" / "echo_match" / "requirements.txt")
     .unlink()),
], ids=["config-edited", "file-added", "file-removed"])
def test_only_the_changed_package_is_validated_again(trees: dict[str, list[Path]],
                                                     tmp_path: Path, name: str,
                                                     change: object) -> None:
    pkgs = trees[name]
    answer = _stored(pkgs, tmp_path)
    assert sorted(key for key, *_ in answer.items) == sorted(map(str, pkgs))
    change(pkgs[5])  # type: ignore[operator]
    again, ran = _run(pkgs, tmp_path)
    assert ran == [str(pkgs[5])]
    _same_as_fresh(again, pkgs, tmp_path)


def test_invalid_packages_answered_from_the_store_keep_their_findings(
        trees: dict[str, list[Path]], tmp_path: Path) -> None:
    pkgs = trees["invalid"]
    _stored(pkgs, tmp_path)
    config = pkgs[7] / CONFIG
    config.write_text(config.read_text() + "# a comment\n")
    again, ran = _run(pkgs, tmp_path)
    assert ran == [str(pkgs[7])] and again.returncode == 1
    assert str(pkgs[3]).encode() in again.stdout and b"EK102" in again.stdout
    _same_as_fresh(again, pkgs, tmp_path)


def test_a_settings_file_above_the_packages_validates_them_all_again(
        trees: dict[str, list[Path]], tmp_path: Path) -> None:
    pkgs = trees["settings"]
    _stored(pkgs, tmp_path)
    (pkgs[0].parent / "envkit.toml").write_text('select = ["EK2"]\nstrict = true\n')
    again, ran = _run(pkgs, tmp_path)
    assert ran == sorted(map(str, pkgs))
    _same_as_fresh(again, pkgs, tmp_path)


def test_a_package_inside_another_keeps_no_answers_of_its_own(trees: dict[str, list[Path]],
                                                              tmp_path: Path) -> None:
    """The inner package's settings are looked for in the outer one's directory too (once per
    process, for both): a change there must validate both again, so neither is kept."""
    pkgs = trees["nested"]
    assert _stored(pkgs, tmp_path).items == ()
    (pkgs[0] / CONFIG).write_text((pkgs[0] / CONFIG).read_text() + "  oops: [\n")
    again, ran = _run(pkgs, tmp_path)
    assert ran == sorted(map(str, pkgs))
    _same_as_fresh(again, pkgs, tmp_path)


def test_a_package_named_twice_keeps_no_answers_of_its_own(trees: dict[str, list[Path]],
                                                           tmp_path: Path) -> None:
    """By its path and through a link: its settings are looked up once, for either name."""
    pkgs = trees["twice"]
    assert _stored(pkgs, tmp_path).items == ()
    (pkgs[0] / "envkit.toml").write_text('select = ["EK2"]\n')
    again, ran = _run(pkgs, tmp_path)
    assert ran == sorted(map(str, pkgs))
    _same_as_fresh(again, pkgs, tmp_path)


def test_a_stored_result_that_no_longer_loads_is_run_again(tmp_path: Path) -> None:
    from envkit.replay.record import Recorder
    from envkit.replay.store import Recalled

    recorder = Recorder(ignore=str(tmp_path))
    recorder.recalled = {"a": Recalled(b"not a pickle", (), (), "/a"),
                         "b": Recalled(pickle.dumps(7), (), (), "/b")}
    assert recorder.recall(["a", "b", "c"]) == {1: 7}
    assert list(recorder.reused) == ["b"]


def test_a_run_that_reused_packages_is_stored_and_answers_the_next_one(
        trees: dict[str, list[Path]], tmp_path: Path) -> None:
    pkgs = trees["again"]
    _stored(pkgs, tmp_path)
    (pkgs[9] / CONFIG).write_text((pkgs[9] / CONFIG).read_text() + "# a comment\n")
    time.sleep(RACY_NS / 1e9 + 0.2)  # else the edit is too new for the answer to be kept
    partial, ran = _run(pkgs, tmp_path)
    assert ran == [str(pkgs[9])]
    replayed, ran = _run(pkgs, tmp_path)
    assert ran == [] and replayed.stdout == partial.stdout
    (pkgs[1] / CONFIG).write_text((pkgs[1] / CONFIG).read_text() + "# another\n")
    third, ran = _run(pkgs, tmp_path)  # the reused packages were kept with their inputs
    assert ran == [str(pkgs[1])]
    _same_as_fresh(third, pkgs, tmp_path)


# -- the check, on answers built by hand ---------------------------------------------------

def _answer(tmp_path: Path) -> tuple[Answer, Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    for pkg in (a, b):
        (pkg / "sub").mkdir(parents=True)
        (pkg / "sub" / "f.yaml").write_text("x: 1\n")
    shared = tmp_path / "shared.toml"
    shared.write_text("")
    reads = [(STAT, str(a / "sub" / "f.yaml")), (LISTED, str(a / "sub")),
             (STAT, str(b / "sub" / "f.yaml")), (LISTED, str(b / "sub")), (STAT, str(shared))]
    entries = [(LSTAT, str(p / "sub" / "f.yaml")) for p in (a, b)]
    inputs = tuple((how, path, identity(path, how)) for how, path in [*reads, *entries])
    items = ((str(a), b"A", tuple(reads[:2]), str(a)), (str(b), b"B", tuple(reads[2:4]), str(b)))
    return Answer((), (packed(inputs),), (), 0, items), a, b


def test_the_check_names_the_items_whose_own_inputs_changed(tmp_path: Path) -> None:
    answer, a, b = _answer(tmp_path)
    assert answer.stale() == frozenset()
    (b / "sub" / "f.yaml").write_text("x: 22\n")  # its STAT and its entry's LSTAT
    assert answer.stale() == {str(b)}
    recalled = answer.recalled(frozenset({str(b)}))
    assert list(recalled) == [str(a)] and recalled[str(a)].result == b"A"
    assert {(how, path) for how, path, _ in recalled[str(a)].inputs} == {
        (STAT, str(a / "sub" / "f.yaml")), (LISTED, str(a / "sub")),
        (LSTAT, str(a / "sub" / "f.yaml"))}


def test_the_check_runs_everything_again_for_any_other_change(tmp_path: Path) -> None:
    answer, a, _ = _answer(tmp_path)
    (tmp_path / "shared.toml").write_text("strict = true\n")
    assert answer.stale() is None
    answer, a, _ = _answer(tmp_path / "again")
    (a / "sub" / "new.yaml").write_text("")  # a new entry: its listing changed, a's own
    assert answer.stale() == {str(a)}
    read_unset = Answer((("ENVKIT_SOMETHING", None),), answer.parts, (), 0, answer.items)
    assert read_unset.stale() == {str(a)}  # unset then, unset now: only a's listing
    read_set = Answer((("ENVKIT_SOMETHING", "1"),), answer.parts, (), 0, answer.items)
    assert read_set.stale() is None  # a variable the run read, now another value


def test_the_check_stats_a_path_once_unless_it_is_a_link(tmp_path: Path) -> None:
    """A path looked at both ways is lstat'ed once when it is a file; through a link, the
    stat still follows it: the target's change is a change."""
    target, link, plain = tmp_path / "target.yaml", tmp_path / "link.yaml", tmp_path / "f.yaml"
    target.write_text("a: 1\n")
    plain.write_text("b: 1\n")
    link.symlink_to(target)
    looked = [(how, str(path)) for path in (link, plain) for how in (LSTAT, STAT)]
    answer = Answer((), (packed([(how, path, identity(path, how)) for how, path in looked]),), (),
                    0)
    assert answer.stale() == frozenset()
    target.write_text("a: 22\n")
    assert answer.stale() is None
    answer = Answer((), (packed([(how, path, identity(path, how)) for how, path in looked]),), (),
                    0)
    plain.write_text("b: 22\n")
    assert answer.stale() is None


def test_no_package_keeps_answers_of_its_own_when_one_lies_inside_another() -> None:
    from envkit.replay.items import item_records

    def items(*reals: str) -> dict[str, tuple[list[tuple[int, str]], bytes]]:
        return {real: ([(STAT, f"{real}/f")], b"r") for real in reals}

    assert [key for key, *_ in item_records(items("/t/a", "/t/b"), {}, {}, {})] == [
        "/t/a", "/t/b"]
    for nested in (("/t/a", "/t/a/b"), ("/t", "/t/a/b/c"), ("/", "/a")):
        assert item_records(items(*nested), {}, {}, {}) == ()


def test_an_items_real_path_is_what_realpath_gives(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Its directory's realpath is taken once for the tree; the answer is ``realpath``'s for
    every spelling of a package: a linked directory or package, ``.``/``..``, relative."""
    from envkit.model.realpaths import real_path

    (tmp_path / "real" / "pkg").mkdir(parents=True)
    (tmp_path / "via").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "linked").symlink_to(tmp_path / "real" / "pkg")
    monkeypatch.chdir(tmp_path)
    directories: dict[str, str] = {}
    for spelling in ("real/pkg", "via/pkg", "via/linked", "via/pkg/..", "via/./pkg", "via/",
                     "via/linked/../pkg", str(tmp_path / "via" / "pkg"), "pkg-missing"):
        assert real_path(spelling, directories) == os.path.realpath(spelling), spelling
