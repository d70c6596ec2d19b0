"""``envkit validate`` as users and CI see it: formats, selection, strictness, exit codes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.validators import RULES

CASES = REPO_ROOT / "fixtures" / "packages"
VALID = CASES / "valid-native-v1" / "pkg"
CONFIG = "resources_servers/echo_match/configs/echo_match.yaml"


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    rc = main(["validate", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """Independent faults in the manifest, the layout and a Gym config, in one package."""
    pkg = tmp_path / "pkg"
    shutil.copytree(VALID, pkg, symlinks=True)
    manifest = pkg / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text() + "version: 2\n")  # EK102, line 8
    (pkg / "pyproject.toml").write_text("[project]\n")  # EK203
    (pkg / "resources_servers" / "echo_match" / "rows.jsonl").write_text("{}\n")  # EK200
    (pkg / CONFIG).write_text("echo_match: [unclosed\n")  # EK300 once the Gym-config rules land
    return pkg


def test_valid_package_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _cli(capsys, VALID)
    assert rc == 0 and "valid: native-v1 package" in out and not err


def test_human_format(capsys: pytest.CaptureFixture[str], broken: Path) -> None:
    rc, out, _ = _cli(capsys, broken)
    assert rc == 1
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if " error[EK102] " in line)
    assert lines[first] == f"{broken}/nemo-environment.yaml:8:1: error[EK102] unknown key `version`"
    assert lines[first + 1].startswith("  = help: ")
    assert f"{broken}/pyproject.toml: error[EK203] " in out
    assert re.search(r"^invalid: \d+ errors?, 0 warnings$", out, re.MULTILINE)


def test_all_faults_reported_in_one_run(capsys: pytest.CaptureFixture[str], broken: Path) -> None:
    rc, out, _ = _cli(capsys, broken, "--format", "json")
    codes = {d["code"] for d in json.loads(out)["diagnostics"]}
    expected = {"EK102", "EK200", "EK203"} | ({"EK300"} if "EK300" in RULES else set())
    assert rc == 1 and expected <= codes


def test_json_matches_published_schema_and_is_all_of_stdout(
    capsys: pytest.CaptureFixture[str], broken: Path
) -> None:
    main(["schema", "diagnostics"])
    schema = json.loads(capsys.readouterr().out)
    rc, out, _ = _cli(capsys, broken, "--format", "json")
    report = json.loads(out)  # the whole of stdout parses: nothing else was printed there
    Draft202012Validator(schema).validate(report)
    assert rc == 1 and report["valid"] is False and report["format"] == "native-v1"
    assert report["name"] == "echo-match"
    ek102 = next(d for d in report["diagnostics"] if d["code"] == "EK102")
    assert ek102["line"] == 8 and ek102["path"] == "nemo-environment.yaml"
    assert ek102["url"] is None and ek102["hint"]  # no docs-url configured: no link


def test_json_for_a_valid_package(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _cli(capsys, VALID, "--format", "json")
    assert rc == 0 and json.loads(out)["valid"] is True and json.loads(out)["diagnostics"] == []


def test_github_annotations(capsys: pytest.CaptureFixture[str], broken: Path) -> None:
    rc, out, _ = _cli(capsys, broken, "--format", "github")
    assert rc == 1
    expected = f"::error file={broken}/nemo-environment.yaml,line=8,col=1,title=EK102::unknown key "
    assert expected in out
    assert all(line.startswith(("::error ", "::warning ")) for line in out.splitlines())


def test_select_and_ignore_match_by_prefix(
    capsys: pytest.CaptureFixture[str], broken: Path
) -> None:
    def codes(*args: str) -> set[str]:
        _, out, _ = _cli(capsys, broken, "--format", "json", *args)
        return {d["code"] for d in json.loads(out)["diagnostics"]}

    assert codes("--select", "EK1") == {"EK102"}
    assert codes("--select", "EK2") == {"EK200", "EK203"}
    assert codes("--select", "EK102,EK203") == {"EK102", "EK203"}
    assert codes("--select", "EK2", "--ignore", "EK20") == set()
    assert codes("--select", "ek2", "--ignore", "EK203") == {"EK200"}
    assert "EK102" not in codes("--ignore", "EK1")


def test_selecting_away_every_error_makes_the_package_valid(
    capsys: pytest.CaptureFixture[str], broken: Path
) -> None:
    rc, _, _ = _cli(capsys, broken, "--select", "EK6")
    assert rc == 0


def test_warnings_fail_only_with_strict(capsys: pytest.CaptureFixture[str]) -> None:
    pkg = CASES / "EK113-duplicate-config-path" / "pkg"
    rc, out, _ = _cli(capsys, pkg)
    assert rc == 0 and "(1 warning)" in out and " warning[EK113] " in out
    rc, out, _ = _cli(capsys, pkg, "--strict")
    assert rc == 1 and "--strict: warnings fail" in out
    rc, out, _ = _cli(capsys, pkg, "--strict", "--format", "json")
    assert rc == 1 and json.loads(out)["valid"] is False


@pytest.mark.parametrize(
    "args",
    [
        ["--select", "XX1"],
        ["--format", "yaml"],
        ["--arch", "sparc"],
        ["--glibc", "3_1"],
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    rc = main(["validate", str(VALID), *args])
    out, err = capsys.readouterr()
    assert rc == 2 and not out and "Traceback" not in err


def test_no_path_checks_the_current_directory_as_ruff_does(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a usage error: the working directory is the PATH (here a package)."""
    monkeypatch.chdir(VALID)
    rc, out, err = _cli(capsys)
    assert rc == 0 and "valid: native-v1 package" in out and not err


def test_smoke_with_no_path_runs_the_current_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``validate --smoke`` takes `.` as validate does; at a workspace root, several: refused."""
    from envkit.validate.gate import GateRequest, GateUsageError, one_package

    monkeypatch.chdir(VALID)
    assert one_package(GateRequest(), "--smoke") == Path()
    for name in ("a", "b"):
        shutil.copytree(VALID, tmp_path / "envs" / name)
    (tmp_path / "envkit.toml").write_text('packages = ["envs/*"]\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(GateUsageError, match="the paths hold 2"):
        one_package(GateRequest(), "--smoke")


def test_missing_package_dir_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, out, err = _cli(capsys, tmp_path / "nope")
    assert rc == 2 and not out and "does not exist" in err


def test_schema_command_prints_manifest_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "manifest"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["additionalProperties"] is False
    assert schema["properties"]["format"]["enum"] == ["native-v1", "wheels-v1", "adapter-wheels-v1"]


def test_rule_command_explains_layout_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "EK207"]) == 0
    out = capsys.readouterr().out
    assert "EK207" in out and "Why is this bad?" in out
