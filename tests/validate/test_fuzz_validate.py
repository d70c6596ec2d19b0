"""Property-based fuzzing of ``envkit validate``: whatever the input, exit 0 or 1, one valid
UTF-8 JSON report on stdout with ``--format json``, no EK000 (the safety net is not a place a
defect may land), in bounded time and memory. The one exit 2: a tree whose own settings file
(``pyproject.toml`` or ``envkit.toml`` at the package's root) cannot be used, which stops the
run with an error naming the file, as ruff stops on a ``pyproject.toml`` it cannot parse.

Most examples run in-process through the CLI entry (cheap); a few run ``envkit validate`` in
a subprocess under ``resource`` limits, where time and peak RSS are measured for real.

Profiles (hypothesis settings profiles), chosen with ``ENVKIT_FUZZ_PROFILE``:
``fast`` (default; CI's fast group, derandomized, well under 60 s) and ``nightly`` (50x the
examples, random seeds). ``ENVKIT_FUZZ_STATS=1`` prints examples run and the slowest case.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fuzz_strategies import (
    job_texts,
    jsonl_lines,
    tree_ops,
    wheel_archives,
    yaml_documents,
    yaml_values,
)
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.validate.validate import INTERNAL_ERROR

ROOT = REPO_ROOT
PACKAGES = ROOT / "fixtures" / "packages"
NATIVE = PACKAGES / "valid-native-v1" / "pkg"
WHEELS = PACKAGES / "valid-wheels-v1" / "pkg"
DATASET = PACKAGES / "valid-dataset" / "data"
JOB = json.loads((PACKAGES / "valid-job-grpo-lora" / "job.json").read_text())
ROW = json.loads((DATASET / "training.jsonl").read_text().splitlines()[0])
CONFIG = "resources_servers/echo_match/configs/echo_match.yaml"
MANIFEST_KEYS = ("format", "config_paths", "metadata", "adapter", "description")

IN_PROCESS_SECONDS = 10.0
SUBPROCESS_SECONDS = 30.0
SUBPROCESS_RSS_MIB = 512
pytestmark = pytest.mark.timeout(600)  # the nightly profile; the fast one takes seconds

_COMMON = {"deadline": None, "database": None, "print_blob": True,
           "suppress_health_check": list(HealthCheck)}
settings.register_profile("envkit-fuzz-fast", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("envkit-fuzz-nightly", max_examples=1500, **_COMMON)
settings.register_profile("envkit-fuzz-medium", max_examples=300, **_COMMON)
PROFILE = os.environ.get("ENVKIT_FUZZ_PROFILE", "fast")
FUZZ = settings(settings.get_profile(f"envkit-fuzz-{PROFILE}"))
FEW = settings(FUZZ, max_examples=max(3, FUZZ.max_examples // 10))
STATS: dict[str, object] = {"examples": 0, "slowest": (0.0, ""), "largest": (0, "")}


def _record(seconds: float, size: int, what: str) -> None:
    STATS["examples"] = int(STATS["examples"]) + 1  # type: ignore[call-overload]
    if seconds > STATS["slowest"][0]:  # type: ignore[index]
        STATS["slowest"] = (seconds, what)
    if size > STATS["largest"][0]:  # type: ignore[index]
        STATS["largest"] = (size, what)


@pytest.fixture(scope="module", autouse=True)
def _report_stats() -> object:
    yield
    if os.environ.get("ENVKIT_FUZZ_STATS"):
        print(f"\nfuzz[{PROFILE}]: {STATS['examples']} examples; slowest "
              f"{STATS['slowest'][0]:.2f}s ({STATS['slowest'][1]}); largest input "  # type: ignore[index]
              f"{STATS['largest'][0]:,} bytes ({STATS['largest'][1]}); subprocess peak RSS "  # type: ignore[index]
              f"{STATS.get('max_rss_mib', 0):.0f} MiB", file=sys.__stderr__)


_SETTINGS_ERROR = re.compile(r"^Error: /\S+/(?:pyproject|envkit)\.toml: ", re.MULTILINE)


def _check(args: list[str], what: str, size: int) -> dict:
    """The contract, in-process through the CLI entry."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["validate", *args, "--format", "json"])
    elapsed = time.perf_counter() - start
    _record(elapsed, size, what)
    if rc == 2 and _SETTINGS_ERROR.search(err.getvalue()):
        error = json.loads(out.getvalue())["error"]  # nothing validated: the error, as JSON
        assert (error["kind"], error["type"]) == ("usage", "SettingsError"), error
        return {}
    assert rc in (0, 1), (rc, err.getvalue()[-2000:])
    text = out.getvalue()
    text.encode("utf-8")  # strict: no lone surrogates on stdout
    report = json.loads(text)
    codes = {d["code"] for d in report["diagnostics"]}
    assert INTERNAL_ERROR not in codes, report["diagnostics"]
    assert report["valid"] == (rc == 0)
    assert elapsed < IN_PROCESS_SECONDS, (what, elapsed)
    return report


@pytest.fixture(scope="module")
def work() -> object:
    with tempfile.TemporaryDirectory(prefix="envkit-fuzz-") as tmp:
        yield Path(tmp)


def _fresh(work: Path, source: Path) -> Path:
    dest = work / "pkg"
    if dest.is_dir() and not dest.is_symlink():
        shutil.rmtree(dest)
    elif dest.exists() or dest.is_symlink():
        dest.unlink()
    return Path(shutil.copytree(source, dest, symlinks=True))


@FUZZ
@given(doc=yaml_documents(MANIFEST_KEYS))
def test_fuzz_manifest_yaml(work: Path, doc: bytes) -> None:
    pkg = _fresh(work, NATIVE)
    (pkg / "nemo-environment.yaml").write_bytes(doc)
    _check([str(pkg)], "manifest yaml", len(doc))


@FUZZ
@given(key=st.sampled_from(["entrypoint", "domain", "description", "extra", "host", "port",
                            "resources_server", "datasets", "config_paths"]),
       value=yaml_values, whole=st.none() | yaml_documents())
def test_fuzz_gym_config_yaml(work: Path, key: str, value: str, whole: bytes | None) -> None:
    pkg = _fresh(work, NATIVE)
    config = pkg / CONFIG
    if whole is not None:
        config.write_bytes(whole)
    else:
        text = config.read_text().rstrip("\n")
        config.write_text(f"{text}\n    {key}: {value}\n")
    _check([str(pkg), "--offline"], "gym config yaml", config.stat().st_size)


@FUZZ
@given(wheel=wheel_archives(), deep=st.booleans())
def test_fuzz_wheels(work: Path, wheel: tuple[str, bytes], deep: bool) -> None:
    pkg = _fresh(work, WHEELS)
    name, data = wheel
    path = Path(os.fsdecode(os.fsencode(pkg / "wheels") + b"/" + os.fsencode(name)))
    path.write_bytes(data)
    args = [str(pkg), "--offline", *(["--verify-hashes"] if deep else [])]
    _check(args, "wheel zip", len(data))


def _apply(pkg: Path, op: tuple[str, str, str, str]) -> None:
    kind, folder, name, content = op
    if name in (".", ".."):
        return  # would name the folder itself (or its parent), not an entry in it
    base = pkg / folder
    if base.is_symlink() or (base.exists() and not base.is_dir()):
        return  # an earlier edit put a link or a file where this one wants a directory
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # a link loop or a file on the way
    name = {"requirements": "requirements.txt", "pyproject": "pyproject.toml"}.get(kind, name)
    target = base / name
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    payload = content.encode("utf-8", "surrogatepass")
    if kind == "dir":
        target.mkdir()
    elif kind == "link-in":
        target.symlink_to(os.path.relpath(pkg / "nemo-environment.yaml", base))
    elif kind == "link-out":
        target.symlink_to("/etc/hostname")
    elif kind == "link-loop":
        target.symlink_to(name)
    elif kind == "dangling":
        target.symlink_to("nowhere")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "bad-name":
        Path(os.fsdecode(os.fsencode(base) + b"/bad\xff\n")).write_bytes(payload)
    elif kind == "requirements":
        lines = ["-r base.txt", "-c constraints.txt", "six \\", ">=1", "-e ../..", content]
        target.write_text("\n".join(lines) + "\n")
    elif kind == "pyproject":
        toml = f'[project]\nname = "x"\ndependencies = ["{content}"]\n'
        target.write_text(toml)
    else:
        target.write_bytes(payload)


@FUZZ
@given(ops=tree_ops, source=st.sampled_from([NATIVE, WHEELS]))
def test_fuzz_trees(work: Path, ops: list, source: Path) -> None:
    pkg = _fresh(work, source)
    for op in ops:
        _apply(pkg, op)
    _check([str(pkg)], "tree", len(ops))


@FUZZ
@given(lines=jsonl_lines(ROW), validation=st.booleans())
def test_fuzz_jsonl_rows(work: Path, lines: bytes, validation: bool) -> None:
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir()
    (data / ("validation.jsonl" if validation else "training.jsonl")).write_bytes(lines)
    _check(["--dataset", str(data)], "jsonl rows", len(lines))


@FUZZ
@given(text=job_texts(JOB))
def test_fuzz_job_json(work: Path, text: bytes) -> None:
    job = work / "job.json"
    job.write_bytes(text)
    _check(["--job", str(job)], "job json", len(text))


def _limits() -> None:
    """In the child: address space, CPU seconds and file size capped."""
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))
    resource.setrlimit(resource.RLIMIT_CPU, (int(SUBPROCESS_SECONDS), int(SUBPROCESS_SECONDS)))
    resource.setrlimit(resource.RLIMIT_FSIZE, (2**20, 2**20))


_CHILD = """
import atexit, resource, sys
def _rss():
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sys.stderr.write(f"\\nENVKIT_FUZZ_MAXRSS_KIB={kib}\\n")
atexit.register(_rss)
from envkit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _subprocess_contract(args: list[str], what: str, size: int) -> None:
    """``envkit validate`` in a child under rlimits; the child reports its own peak RSS."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, "validate", *args, "--format", "json"],
        capture_output=True, timeout=SUBPROCESS_SECONDS * 2, preexec_fn=_limits, check=False,
    )
    elapsed = time.perf_counter() - start
    _record(elapsed, size, f"{what} (subprocess)")
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode in (0, 1), (proc.returncode, err[-2000:])
    report = json.loads(proc.stdout.decode("utf-8"))
    assert INTERNAL_ERROR not in {d["code"] for d in report["diagnostics"]}
    assert elapsed < SUBPROCESS_SECONDS, elapsed
    rss_mib = int(err.rsplit("ENVKIT_FUZZ_MAXRSS_KIB=", 1)[1].split()[0]) / 1024
    STATS["max_rss_mib"] = max(float(STATS.get("max_rss_mib", 0.0)), rss_mib)  # type: ignore[arg-type]
    assert rss_mib < SUBPROCESS_RSS_MIB, f"peak RSS {rss_mib:.0f} MiB"


@FEW
@given(doc=yaml_documents(MANIFEST_KEYS), wheel=wheel_archives(), text=job_texts(JOB))
def test_fuzz_subprocess_time_and_memory(
    work: Path, doc: bytes, wheel: tuple[str, bytes], text: bytes
) -> None:
    pkg = _fresh(work, WHEELS)
    (pkg / "nemo-environment.yaml").write_bytes(doc)
    name, data = wheel
    Path(os.fsdecode(os.fsencode(pkg / "wheels") + b"/" + os.fsencode(name))).write_bytes(data)
    job = work / "job.json"
    job.write_bytes(text)
    _subprocess_contract([str(pkg), "--job", str(job), "--verify-hashes"], "package+job",
                         len(doc) + len(data) + len(text))
