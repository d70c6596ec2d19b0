"""One regression test per root cause a mutation fuzzer found in ``envkit validate`` (exit 2
with a traceback, a hang, or gigabytes of memory), each input built here. The contract: any
input gives exit 0 or 1 with a report, within seconds, in bounded memory."""

from __future__ import annotations

import base64
import bz2
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from support.zipcraft import ENCRYPTED, UTF8, Member, build_zip, deflate_zeros, raw_deflate

import envkit.validators as validators_pkg
from envkit.cli import main
from envkit.model import closure
from envkit.model.jobfile import load_job, parse_job
from envkit.model.package import load_package
from envkit.model.target import Target
from envkit.model.wheelfile import WheelFile, read_wheel
from envkit.model.yamlio import parse_yaml
from envkit.supply import atomic
from envkit.validate.validate import INTERNAL_ERROR, ValidateRequest, validate

ROOT = REPO_ROOT
VALID = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
CASES = sorted(p.parent for p in (ROOT / "fixtures" / "packages").glob("*/case.json"))
CONFIG = "resources_servers/echo_match/configs/echo_match.yaml"
INFO = "demo-1.0.dist-info"


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    return Path(shutil.copytree(VALID, tmp_path / "pkg", symlinks=True))


def _json_run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    """``envkit validate ... --format json``: exit 0/1, no traceback, stdout one JSON report
    that encodes as strict UTF-8, and no EK000 (the safety net is not where a defect lands)."""
    rc = main(["validate", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert rc in (0, 1), (rc, err)
    assert "Traceback" not in out + err
    report = json.loads(out.encode("utf-8").decode("utf-8"))
    assert INTERNAL_ERROR not in {d["code"] for d in report["diagnostics"]}, report
    return rc, report


def _codes(report: dict) -> list[str]:
    return [d["code"] for d in report["diagnostics"]]


def _peak_mb(func, *args):
    tracemalloc.start()
    try:
        result = func(*args)
        return result, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# 1. PyYAML constructor errors that are not YAMLError
@pytest.mark.parametrize("value", [
    "1" * 5000, "2020-13-45", "!!bool maybe", "!!timestamp nope", "!!int ''", "!!float xyz",
])
def test_1_yaml_scalar_constructor_errors(
    capsys: pytest.CaptureFixture[str], pkg: Path, value: str
) -> None:
    manifest = pkg / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text() + f"extra: {value}\n")
    rc, report = _json_run(capsys, str(pkg))
    (diag,) = [d for d in report["diagnostics"] if d["code"] == "EK101"]
    assert rc == 1 and diag["line"] == manifest.read_text().count("\n")


# 2. a self-referencing alias grew key paths quadratically
@pytest.mark.parametrize("text", [b"cyc: &c [*c]\n", b"m: &m {a: *m, b: [*m, *m]}\n"])
def test_2_recursive_alias_is_refused_in_bounded_memory(text: bytes) -> None:
    doc, peak = _peak_mb(parse_yaml, "x.yaml", text)
    assert doc.error is not None and "recursive alias" in doc.error
    assert peak < 20


# 2b. (found while fixing 2) libyaml's composer recurses in C: with PyYAML builds whose libyaml
# has no nesting limit, 50,000 levels was a segfault (refused here before composing)
@pytest.mark.parametrize("unit", ["[", "{a: ", "- ", "? "])
def test_2b_nesting_past_libyaml_stack_is_refused_not_a_segfault(unit: str) -> None:
    code = ("import sys; from envkit.model.yamlio import parse_yaml; "
            f"doc = parse_yaml('x.yaml', {unit!r}.encode() * 60_000); print(doc.error)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0 and "nest" in proc.stdout, proc.stderr[-500:]


# 3. `${list.²}` and a 5,000-digit index in an interpolation
@pytest.mark.parametrize("index", ["²", "9" * 5000])
def test_3_interpolation_index_that_int_refuses(
    capsys: pytest.CaptureFixture[str], pkg: Path, index: str
) -> None:
    config = pkg / CONFIG
    extra = f"extra_list: [1, 2]\nextra_ref: ${{extra_list.{index}}}\n"
    config.write_text(config.read_text() + extra)
    _json_run(capsys, str(pkg))


# 4. + 15. a huge integer in a job: json raises ValueError; a product past 4,300 digits
@pytest.mark.parametrize("text", [
    '{"training": {"batch_size": ' + "1" * 5000 + "}}",
    '{"training": {"batch_size": 2, "num_prompts_per_step": ' + "3" * 2200
    + ',\n "num_generations_per_prompt": ' + "7" * 2200 + "}}",
])
def test_4_15_job_with_huge_integers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str
) -> None:
    job = tmp_path / "job.json"
    job.write_text(text)
    rc, report = _json_run(capsys, "--job", str(job))
    (diag,) = [d for d in report["diagnostics"] if d["code"] == "EK611"]
    assert rc == 1 and "digits" in diag["message"] and diag["line"] in (1, 2)


# 5. the same in a dataset row
def test_5_dataset_row_with_a_huge_integer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    row = '{"responses_create_params": {"input": [' + "9" * 5000 + "]}}\n"
    (data / "training.jsonl").write_text(row)
    rc, report = _json_run(capsys, "--dataset", str(data))
    assert rc == 1 and "EK501" in _codes(report)


# 6. a FIFO, /dev/zero and a 2 GiB sparse file as --job
@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "sparse"])
def test_6_job_that_is_not_a_small_regular_file(tmp_path: Path, kind: str) -> None:
    job = tmp_path / "job.json"
    if kind == "fifo":
        os.mkfifo(job)
    elif kind == "dev-zero":
        job.symlink_to("/dev/zero")
    else:
        with job.open("wb") as fh:
            fh.truncate(2 * 2**30)
    doc, peak = _peak_mb(load_job, job)
    assert doc.error is not None and doc.data is None
    assert peak < 40  # at most MAX_JOB_BYTES + 1 read, never the whole file


# 7. configs whose config_paths fan out to every other config
@pytest.mark.timeout(120)
def test_7_config_fan_out_is_linear(pkg: Path) -> None:
    n = 300
    names = [f"configs/c{i}.yaml" for i in range(n)]
    listing = "config_paths:\n" + "".join(f"  - {name}\n" for name in names)
    (pkg / "configs").mkdir()
    for name in names:
        (pkg / name).write_text(listing)
    manifest = pkg / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text().replace("config_paths:\n", listing, 1))
    (pkg / "configs" / "wide.yaml").write_text(
        "config_paths:\n" + "  - configs/c0.yaml\n" * 50_000)
    start = time.perf_counter()
    package = load_package(pkg)
    assert time.perf_counter() - start < 30
    assert len(package.configs) >= n


# 8. a member declared as 50 bytes that inflates to 128 MiB
def test_8_deflate_bomb_is_bounded_by_the_declared_size(tmp_path: Path) -> None:
    bomb, crc = deflate_zeros(128 * 2**20)
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(build_zip([
        Member(f"{INFO}/METADATA".encode(), bomb, method=8, size=50, crc=crc),
        Member(f"{INFO}/RECORD".encode(), b""),
    ]))
    result, peak = _peak_mb(read_wheel, wheel)
    assert result.error is not None and "METADATA" in result.error
    assert peak < 40


@pytest.mark.parametrize("prefix", [b"", b"#!/bin/sh\n"])  # the fast reader, zipfile's
def test_8_honest_big_member_is_hashed_in_bounded_memory(tmp_path: Path, prefix: bytes) -> None:
    """--verify-hashes over a member that really is 64 MiB: streamed, not held."""
    size = 64 * 2**20
    big, crc = deflate_zeros(size)
    digest = "sha256=" + base64.urlsafe_b64encode(
        hashlib.sha256(bytes(size)).digest()).rstrip(b"=").decode()
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(build_zip([
        *_wheel_members(**{"demo/big.bin": f"{digest},{size}"}),
        Member(b"demo/big.bin", big, method=8, size=size, crc=crc)], prefix=prefix))
    result, peak = _peak_mb(lambda: read_wheel(wheel, deep=True))
    assert result.error is None and not [i for i in result.record_issues if "big.bin" in i]
    assert peak < 40


def test_8_bzip2_bomb_through_zipfile_is_bounded(tmp_path: Path) -> None:
    """81 bytes of bzip2 hold 50 MB of zeros; ``zipfile`` would inflate them unbounded."""
    bomb = bz2.compress(bytes(64 * 2**20))
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(build_zip([
        *_wheel_members(**{"demo/x.py": "sha256=x,50"}),
        Member(b"demo/x.py", bomb, method=12, size=50, crc=0)], prefix=b"#!/bin/sh\n"))
    result, peak = _peak_mb(lambda: read_wheel(wheel, deep=True))
    assert any("demo/x.py" in issue for issue in result.record_issues)
    assert peak < 40


def _wheel_members(**record: str) -> list[Member]:
    meta = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
    rows = "".join(f"{path},{value}\n" for path, value in record.items())
    return [Member(f"{INFO}/METADATA".encode(), meta),
            Member(f"{INFO}/RECORD".encode(), rows.encode())]


# 9. compression method 99 and an encrypted member, through the zipfile fallback
@pytest.mark.parametrize("member", [
    Member(b"demo/x.py", b"abc", method=99),
    Member(b"demo/x.py", raw_deflate(b"abc"), method=8, size=3, flags=ENCRYPTED),
])
def test_9_zipfile_fallback_errors_are_reported(tmp_path: Path, member: Member) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(build_zip([*_wheel_members(**{"demo/x.py": "sha256=x,3"}), member],
                                prefix=b"#!/bin/sh\n"))
    result = read_wheel(wheel)
    assert result.error is None and result.record_issues  # METADATA read; x.py unreadable


# 10. a member name flagged UTF-8 that is not
def test_10_member_name_flagged_utf8_with_invalid_bytes(tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(build_zip([*_wheel_members(), Member(b"demo/\xff.py", b"", flags=UTF8)]))
    assert "utf-8" in (read_wheel(wheel).error or "").lower()


def _record_issues(tmp_path: Path, value: str, data: bytes = b"abc") -> tuple[str, ...]:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(build_zip([*_wheel_members(**{"demo/x.py": value}),
                                 Member(b"demo/x.py", data)]))
    result = read_wheel(wheel)
    assert result.error is None
    return result.record_issues


# 11. RECORD sizes that pass str.isdigit() but not int()
@pytest.mark.parametrize("size", ["²", "9" * 5000])
def test_11_record_size_isdigit_but_not_int(tmp_path: Path, size: str) -> None:
    _record_issues(tmp_path, f"sha256=x,{size}")


# 12. shake_* hashes need a digest length
@pytest.mark.parametrize("algo", ["shake_128", "shake_256"])
def test_12_record_shake_hash_is_unsupported(tmp_path: Path, algo: str) -> None:
    issues = _record_issues(tmp_path, f"{algo}=abc,3")
    assert any(f"unsupported RECORD hash '{algo}'" in i for i in issues)


# 13. a quoted RECORD field over the csv module's 128 KiB limit
def test_13_record_field_over_csv_limit(tmp_path: Path) -> None:
    issues = _record_issues(tmp_path, f'"sha256={"a" * 200_000}",3')
    assert any("RECORD unreadable" in i for i in issues)


# 14. a wheel file name with byte 0xff: JSON on stdout stays valid UTF-8
def test_14_undecodable_wheel_name_in_json_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pkg = Path(shutil.copytree(ROOT / "fixtures" / "packages" / "valid-wheels-v1" / "pkg",
                               tmp_path / "pkg", symlinks=True))
    bad = os.fsencode(pkg / "wheels") + b"/demo-1.0-py3-none-any\xff.whl"
    Path(os.fsdecode(bad)).write_bytes(b"not a zip")
    rc, report = _json_run(capsys, str(pkg))
    assert rc == 1 and any("\\xff" in d["message"] or "\\xff" in d["path"]
                           for d in report["diagnostics"])


def test_14_lone_surrogate_escape_in_yaml_name(
    capsys: pytest.CaptureFixture[str], pkg: Path
) -> None:
    manifest = pkg / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text().replace("metadata:", 'metadata:\n  x: "\\ud800"', 1))
    _json_run(capsys, str(pkg))


# 15. hex integers bypassed the decimal digit limit
def test_15_hex_integer_in_the_manifest(capsys: pytest.CaptureFixture[str], pkg: Path) -> None:
    manifest = pkg / "nemo-environment.yaml"
    text = manifest.read_text()
    manifest.write_text(text.replace("format: native-v1", "format: 0x" + "f" * 5000))
    rc, report = _json_run(capsys, str(pkg))
    assert rc == 1 and _codes(report) == ["EK101"]


# 16. Requires-Python with a 5,000-digit version
def test_16_requires_python_past_int_limit() -> None:
    wheel = WheelFile("wheels/x.whl", "x.whl", requires_python=">=" + "9" * 5000)
    assert closure.python_ok(wheel, Target()) is True
    assert closure.python_ok(
        WheelFile("wheels/x.whl", "x.whl", requires_python=">=" + "9" * 1000),
        Target()) is False
    assert closure.parse_requirement("demo>=" + "9" * 5000) is None


# Also seen: a --dataset whose training.jsonl links out of the directory
def test_dataset_symlink_out_of_the_directory_is_not_followed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    outside = tmp_path / "secret.jsonl"
    outside.write_text('{"responses_create_params": {"input": []}}\n')
    data = tmp_path / "data"
    data.mkdir()
    (data / "training.jsonl").symlink_to(outside)
    rc, report = _json_run(capsys, "--dataset", str(data))
    (diag,) = report["diagnostics"]
    assert (rc, diag["code"]) == (1, "EK500") and "symlink" in diag["message"]


# Also seen: a built package directory follows the umask, not mkdtemp's 0700
def test_temp_output_dir_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        made = atomic.make_temp_dir(tmp_path / "out")
    finally:
        os.umask(old)
    assert made.stat().st_mode & 0o777 == 0o755


# The guard: a check that raises is one EK000 diagnostic, the rest of the report stays
def test_guard_turns_a_crashing_check_into_a_diagnostic(
    capsys: pytest.CaptureFixture[str], pkg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def check_that_breaks(inputs: object) -> list:
        raise ZeroDivisionError("boom")

    def checks_for(inputs: validators_pkg.Inputs) -> tuple[validators_pkg.Check, ...]:
        return (*validators_pkg.checks_for(inputs), check_that_breaks)

    monkeypatch.setattr("envkit.validate.validate.checks_for", checks_for)
    rc = main(["validate", str(pkg), "--format", "json", "--select", "EK1"])
    report = json.loads(capsys.readouterr().out)
    (diag,) = report["diagnostics"]
    assert rc == 1 and diag["code"] == INTERNAL_ERROR
    assert "check_that_breaks" in diag["message"] and "ZeroDivisionError: boom" in diag["message"]


# Cases with a "setup" are built at test time by test_fixture_cases (which asserts exact codes).
ON_DISK = [c for c in CASES if not json.loads((c / "case.json").read_text()).get("setup")]


@pytest.mark.parametrize("case", ON_DISK, ids=[c.name for c in ON_DISK])
def test_no_fixture_reaches_the_guard(case: Path) -> None:
    spec = json.loads((case / "case.json").read_text())
    report = validate(ValidateRequest(
        package=case / spec["package"] if spec.get("package") else None,
        dataset=case / spec["dataset"] if spec.get("dataset") else None,
        job=case / spec["job"] if spec.get("job") else None,
    ))
    assert INTERNAL_ERROR not in {d.code for d in report.diagnostics}


def test_parse_job_never_raises_on_deep_nesting() -> None:
    assert "nested" in (parse_job("job.json", b"[" * 100 + b"]" * 100).error or "")


def _timed_run(capsys: pytest.CaptureFixture[str], pkg: Path) -> tuple[int, dict, float]:
    start = time.perf_counter()
    rc, report = _json_run(capsys, str(pkg))
    return rc, report, time.perf_counter() - start


def _manifest_error(report: dict) -> dict:
    (diag,) = [d for d in report["diagnostics"] if d["code"] == "EK101"]
    return diag


# 17. (seed s3) a control character plus more than ~5,000 flow/block indicators: the nesting
# pre-screen's libyaml pass raised ReaderError, a YAMLError but no MarkedYAMLError (exit 2)
@pytest.mark.parametrize("indicators", [10, 6_000, 40_000])
def test_17_control_character_past_the_nesting_prescreen(
    capsys: pytest.CaptureFixture[str], pkg: Path, indicators: int
) -> None:
    manifest = pkg / "nemo-environment.yaml"
    deep = "[" * indicators + "]" * indicators
    manifest.write_text(manifest.read_text() + f"extra: a\x01b\ndeep: {deep}\n")
    rc, report = _json_run(capsys, str(pkg))
    diag = _manifest_error(report)
    assert rc == 1 and "'\\x01' is not allowed" in diag["message"]
    assert (diag["line"], diag["column"]) == (8, 9)


# 18. (seed s3) "\U00110000": libyaml gives a syntax error with a line, then the column lookup
# re-parsed with pure-Python PyYAML, whose chr() raises ValueError (exit 2)
@pytest.mark.parametrize("escape", ["\\U00110000", "\\UFFFFFFFF"])
def test_18_escape_past_the_last_code_point(
    capsys: pytest.CaptureFixture[str], pkg: Path, escape: str
) -> None:
    manifest = pkg / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text() + f'extra: "{escape}"\n')
    rc, report = _json_run(capsys, str(pkg))
    diag = _manifest_error(report)
    assert rc == 1 and (diag["line"], diag["column"]) == (8, 11)  # libyaml's mark, after `\U`


# 19. (seed s3) the column lookup re-parsed the whole file with no bound on the work: 100k
# nested `[` took ~100 s, a 2M-item flow list before a stray `]}` 39 s and 620 MB. Columns now
# come from the first parse; the bounds here are generous (seconds on a loaded machine).
@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", ["nested", "wide"])
def test_19_no_second_parse_for_a_column(
    capsys: pytest.CaptureFixture[str], pkg: Path, shape: str
) -> None:
    manifest = pkg / "nemo-environment.yaml"
    if shape == "nested":
        manifest.write_text("format: native-v1\nmetadata: " + "[" * 100_000 + "]" * 100_000)
    else:
        manifest.write_text(manifest.read_text() + "x: [" + "1," * 2_000_000 + "1]]}\n")
    rc, report, seconds = _timed_run(capsys, pkg)
    diag = _manifest_error(report)
    assert rc == 1 and ("nest" in diag["message"] or "nodes" in diag["message"]), diag
    assert seconds < 30, seconds


def test_19_wide_flow_list_is_refused_before_it_is_composed() -> None:
    """The node bound applied while walking the composed tree: libyaml had already built (and
    PyYAML resolved) two million nodes. The byte count of separators now refuses it first."""
    # VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across fork and exec, so the
    # child would report the test process's own peak (hundreds of MiB in a full run).
    code = ("import re; from envkit.model.yamlio import parse_yaml; "
            "doc = parse_yaml('x.yaml', b'a: [' + b'1,' * 2_000_000 + b'1]]}'); "
            "print(doc.error); "
            "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-500:]
    error, rss_kib = proc.stdout.splitlines()
    assert "nodes; not parsed" in error
    assert int(rss_kib) < 200 * 1024, f"peak RSS {int(rss_kib) // 1024} MiB"


# 20. one 7 MB scalar in a manifest or a config: the line reader's patterns over one long line
# took 170x the input (1.18 GB; under a 1.5 GiB address-space cap, exit 2 on MemoryError).
_PEAK = """
import re, sys
from envkit.cli import main
rc = main(["validate", "--no-cache", "--format", "json", sys.argv[1]])
print(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read())[1], file=sys.stderr)
sys.exit(rc)
"""
_BIG = 7_000_000
_SCALARS = {
    "single-quoted": "'" + "abc def " * (_BIG // 8) + "'",
    "double-quoted": '"' + "abc def " * (_BIG // 8) + '"',
    "plain": "abc def " * (_BIG // 8),
    "folded over lines": '"' + "abc def\n  " * (_BIG // 10) + '"',
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["manifest", "config"])
@pytest.mark.parametrize("form", sorted(_SCALARS))
def test_20_peak_memory_is_a_small_multiple_of_a_big_scalar(pkg: Path, where: str,
                                                            form: str) -> None:
    # VmHWM of the child itself (see test 19 for why not ru_maxrss).
    target = pkg / ("nemo-environment.yaml" if where == "manifest" else CONFIG)
    target.write_text(target.read_text() + f"extra: {_SCALARS[form]}\n")
    size = target.stat().st_size
    proc = subprocess.run([sys.executable, "-c", _PEAK, str(pkg)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode in (0, 1), proc.stderr[-500:]
    assert INTERNAL_ERROR not in proc.stdout
    peak = int(proc.stderr.splitlines()[-1]) * 1024
    assert peak <= 20 * size, f"peak RSS {peak / 2**20:.0f} MiB for {size / 2**20:.1f} MiB"
