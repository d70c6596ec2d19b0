"""``envkit validate``'s verdict comes from the package on every run: nothing stored by an
earlier run (or planted where one would be) is printed again, nothing read from a cache is
unpickled, and no path is left out of what a run reads because of its name."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from support.paths import REPO_ROOT

VALID = REPO_ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
INVALID = REPO_ROOT / "fixtures" / "packages" / "EK108-missing-name" / "pkg"


def _envkit(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ENVKIT_CACHE_DIR": str(cache), "XDG_STATE_HOME": str(cache.parent / "st")}
    env.pop("ENVKIT_NO_CACHE", None)
    return subprocess.run([sys.executable, "-m", "envkit", "validate", *args], env=env,
                          capture_output=True, text=True, check=False)


def test_a_run_stores_no_answer_and_a_planted_one_is_never_read(tmp_path: Path) -> None:
    """What an earlier run printed is never an answer: a run leaves nothing but the stores that
    are checked against the package, and files planted where stored answers used to be (a
    "valid" for any command line) change nothing."""
    cache = tmp_path / "cache"
    assert _envkit(str(VALID), cache=cache).returncode == 0
    assert _envkit(str(VALID), cache=cache).returncode == 0
    assert not cache.exists() or {p.name for p in cache.iterdir()} <= {"tree-stamps",
                                                                       "wheel-facts"}
    planted = cache / "replay"
    planted.mkdir(parents=True, exist_ok=True)
    for name in ("00000000", "answer", "ffffffff.bin"):
        (planted / name).write_bytes(b"valid: native-v1 package\n\x00" * 4)
    missing = _envkit(str(tmp_path / "nonexistent" / "pkg"), cache=cache)
    assert missing.returncode == 2, missing.stdout
    bad = _envkit(str(INVALID), "--offline", cache=cache)
    assert bad.returncode == 1 and "EK108" in bad.stdout


def test_no_answer_from_the_last_run_layer_is_left() -> None:
    assert not (REPO_ROOT / "envkit" / "replay").exists()
    proc = subprocess.run([sys.executable, "-c", "import envkit.replay"], capture_output=True,
                          check=False)
    assert proc.returncode != 0


def _calls(tree: ast.AST) -> set[str]:
    """``module.attr`` of every call in ``tree`` (``pickle.loads``, ``marshal.load``...)."""
    found = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)):
            found.add(f"{node.func.value.id}.{node.func.attr}")
    return found


def test_nothing_envkit_reads_is_unpickled_unmarshalled_or_executed() -> None:
    """The one unpickle left reads a pipe from a worker the same call forked
    (``envkit.validate.workers``): no file, no cache, no other process writes into it."""
    banned = {"pickle.load", "pickle.loads", "marshal.load", "marshal.loads", "pickle.Unpickler"}
    allowed = {("envkit/validate/workers.py", "pickle.loads")}
    offenders = []
    for folder in ("envkit", "validators", "converters", "trainer"):
        for file in sorted((REPO_ROOT / folder).rglob("*.py")):
            rel = file.relative_to(REPO_ROOT).as_posix()
            for call in _calls(ast.parse(file.read_text())) & banned:
                if (rel, call) not in allowed:
                    offenders.append(f"{rel}: {call}")
    assert offenders == []


def test_a_package_under_a_path_naming_pycache_is_read_anew(tmp_path: Path) -> None:
    """A path with ``__pycache__`` in it is an input like any other: deleting the manifest of
    a package under ``x__pycache__y/`` changes the verdict at once."""
    pkg = Path(shutil.copytree(VALID, tmp_path / "x__pycache__y" / "pkg"))
    cache = tmp_path / "cache"
    old = time.time() - 3600
    for path in pkg.rglob("*"):
        os.utime(path, (old, old))
    time.sleep(2.1)  # every input older than a racy window, as a stored answer would want
    assert _envkit(str(pkg), "--offline", cache=cache).returncode == 0
    assert _envkit(str(pkg), "--offline", cache=cache).returncode == 0
    (pkg / "nemo-environment.yaml").unlink()
    gone = _envkit(str(pkg), "--offline", cache=cache)
    assert gone.returncode == 1 and "EK100" in gone.stdout
