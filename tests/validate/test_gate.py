"""``envkit validate PATH...``: workspaces of packages, files inside packages (pre-commit), one
report and one exit code; the target from the package's ``wheels.lock``; SARIF output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from jsonschema import Draft4Validator, Draft202012Validator
from support.paths import REPO_ROOT
from wheelfactory import make_wheel

from envkit.cli import main
from envkit.schemas import load_schema
from envkit.validate.discovery import discover

ROOT = REPO_ROOT
CASES = ROOT / "fixtures" / "packages"
VALID = CASES / "valid-native-v1" / "pkg"
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())


def _run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    rc = main(["validate", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace of three packages (``envs/b`` invalid) plus places no glob may reach."""
    root = tmp_path / "repo"
    for name in ("a", "b", "nested/c"):
        shutil.copytree(VALID, root / "envs" / name)
    manifest = root / "envs" / "b" / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text() + "version: 2\n")  # EK102 on line 8
    for skipped in (".hidden/x", ".venv/x", "node_modules/x", "build/x", "dist/x"):
        shutil.copytree(VALID, root / skipped)
        (root / skipped / "nemo-environment.yaml").write_text("format: nope\n")
    (root / "envkit.toml").write_text('packages = ["envs/a", "envs/b", "envs/nested/*"]\n')
    return root


def test_workspace_is_one_run_with_a_section_per_package(
    capsys: pytest.CaptureFixture[str], tree: Path
) -> None:
    rc, out, _ = _run(capsys, tree)
    assert rc == 1
    for name in ("envs/a", "envs/b", "envs/nested/c"):
        assert f"{tree / name}\n" in out
    assert f"{tree}/envs/b/nemo-environment.yaml:8:1: error[EK102] " in out
    assert out.rstrip().splitlines()[-1] == (
        "invalid: 3 packages checked, 2 valid, 1 invalid; 1 error, 0 warnings")


def test_workspace_json_carries_the_package_of_each_diagnostic(
    capsys: pytest.CaptureFixture[str], tree: Path
) -> None:
    rc, out, _ = _run(capsys, tree, "--output-format", "json")
    report = json.loads(out)
    Draft202012Validator(load_schema("diagnostics")).validate(report)
    assert rc == 1 and report["version"] == "2.0" and report["format"] is None
    assert [p["valid"] for p in report["packages"]] == [True, False, True]
    (ek102,) = report["diagnostics"]
    assert ek102["package"] == str(tree / "envs" / "b") and ek102["line"] == 8


def test_exclude_glob(capsys: pytest.CaptureFixture[str], tree: Path) -> None:
    assert _run(capsys, tree, "--exclude", "b")[0] == 0
    assert discover([tree], ["*/nested/*"]).packages == (tree / "envs" / "a", tree / "envs" / "b")


def test_files_stand_for_the_package_that_holds_them(tree: Path) -> None:
    found = discover([tree / "envs" / "b" / "nemo-environment.yaml",
                      tree / "envs" / "a" / "resources_servers" / "echo_match" / "app.py",
                      tree / "README.md"])
    assert found.packages == (tree / "envs" / "b", tree / "envs" / "a")
    assert found.unmatched_files == (tree / "README.md",)


def test_files_outside_packages(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "README.md").write_text("hi\n")
    rc, out, err = _run(capsys, tmp_path / "README.md")
    assert rc == 2 and "not in a package" in err  # named by hand: refused, no silent pass
    rc, out, _ = _run(capsys, tmp_path / "README.md", "--ignore-unowned-files")
    assert rc == 0 and "nothing to validate" in out  # as pre-commit passes it


def test_a_directory_without_packages_is_validated_as_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, out, _ = _run(capsys, tmp_path)
    assert rc == 1 and " error[EK100] " in out  # no silent pass on a wrong directory


def test_dataset_with_several_packages_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tree: Path
) -> None:
    rc, _, err = _run(capsys, tree, "--dataset", tree)
    assert rc == 2 and "--dataset/--job belong to one package" in err


def _platform_package(tmp_path: Path, arch: str) -> Path:
    pkg = tmp_path / "pkg"
    shutil.copytree(CASES / "valid-wheels-v1" / "pkg", pkg)
    for old in (pkg / "wheels").glob("*.whl"):
        old.unlink()
    make_wheel(pkg / "wheels", "echo-scorer", "1.0", tag=f"cp313-cp313-manylinux_2_17_{arch}")
    lock = {"version": "1.0", "target": f"cp313-manylinux_2_28_{arch}", "wheels": []}
    (pkg / "wheels.lock").write_text(json.dumps(lock))
    return pkg


def test_target_defaults_to_the_wheels_lock(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pkg = _platform_package(tmp_path, "aarch64")
    rc, out, _ = _run(capsys, pkg, "--select", "EK4")
    assert rc == 0, out
    assert "target cp313-manylinux_2_28_aarch64 (from wheels.lock)" in out
    rc, out, _ = _run(capsys, pkg, "--select", "EK4", "--output-format", "json")
    (package,) = json.loads(out)["packages"]
    assert package["target_source"] == "wheels.lock"


def test_an_explicit_target_that_disagrees_with_the_lock_is_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pkg = _platform_package(tmp_path, "aarch64")
    rc, out, _ = _run(capsys, pkg, "--select", "EK4", "--arch", "x86_64")
    assert rc == 1 and " error[EK401] " in out  # the flag wins ...
    assert "warning: target cp313-manylinux_2_28_x86_64 (command line) differs" in out  # ... said


def _built_for_aarch64(tmp_path: Path) -> Path:
    """Three aarch64 wheels (two requiring pure helpers) and one stray pure wheel."""
    pkg = _platform_package(tmp_path, "aarch64")
    wheels = pkg / "wheels"
    for old in wheels.glob("*.whl"):
        old.unlink()
    (pkg / "resources_servers/echo_match/requirements.txt").write_text(
        "echo-scorer==1.0\nfast-a\nfast-b\n")
    make_wheel(wheels, "echo-scorer", "1.0", tag="cp313-cp313-manylinux_2_17_aarch64",
               requires=("helper-x",))
    make_wheel(wheels, "fast-a", "1.0", tag="cp313-cp313-manylinux_2_28_aarch64",
               requires=("helper-y",))
    make_wheel(wheels, "fast-b", "1.0", tag="cp313-cp313-manylinux_2_28_aarch64")
    for name in ("helper-x", "helper-y", "stray"):  # stray: dead weight on either target
        make_wheel(wheels, name, "1.0")
    return pkg


def test_a_target_the_lock_disagrees_with_is_the_cause_shown_first(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """82 findings with their one explanation last read as 82 problems: the cause comes first
    and what follows from it (whatever the lock's own target would not report) collapses."""
    pkg = _built_for_aarch64(tmp_path)
    rc, out, _ = _run(capsys, pkg, "--arch", "x86_64")
    lines = out.splitlines()
    assert rc == 1 and lines[0].startswith(
        "warning: target cp313-manylinux_2_28_x86_64 (command line) differs from the "
        "cp313-manylinux_2_28_aarch64")
    assert lines[1] == ("  = follows: 5 findings (3 EK401, 2 EK408); `--output-format json` "
                        "lists each, e.g.")
    assert lines[2].startswith(f"    {pkg}/wheels/echo_scorer-1.0-cp313-cp313-manylinux_2_17_"
                               "aarch64.whl: error[EK401] ")
    assert "envkit build --arch x86_64" in lines[3]
    assert sum(" error[EK401] " in line for line in lines) == 1  # the example; the rest collapsed
    assert [line for line in lines if "EK408" in line and "stray" in line]  # not a follow-on
    assert lines.count(lines[0]) == 1 and lines[-1] == "invalid: 3 errors, 3 warnings"


def test_follow_ons_stay_in_json_and_collapse_in_github(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pkg = _built_for_aarch64(tmp_path)
    _, out, _ = _run(capsys, pkg, "--arch", "x86_64", "--output-format", "json")
    report = json.loads(out)
    assert sorted(d["code"] for d in report["diagnostics"]) == ["EK401"] * 3 + ["EK408"] * 3
    assert report["packages"][0]["notes"][0].startswith("target cp313-manylinux_2_28_x86_64")
    _, out, _ = _run(capsys, pkg, "--arch", "x86_64", "--output-format", "github")
    first, *rest = out.splitlines()
    assert first.startswith("::error title=EK401%2C EK408::target cp313-manylinux_2_28_x86_64")
    assert "5 findings follow from it (3 EK401, 2 EK408: " in first
    assert len(rest) == 1 and "stray-1.0-py3-none-any.whl,title=EK408::" in rest[0]


def test_without_a_disagreeing_lock_there_is_no_cause(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pkg = _built_for_aarch64(tmp_path)
    (pkg / "wheels.lock").unlink()
    rc, out, _ = _run(capsys, pkg, "--arch", "x86_64")  # the default target: no lock to differ
    assert rc == 1 and sum(" error[EK401] " in line for line in out.splitlines()) == 3
    assert "follows:" not in out


def test_sarif_validates_against_the_sarif_2_1_0_schema(
    capsys: pytest.CaptureFixture[str], tree: Path
) -> None:
    rc, out, _ = _run(capsys, tree, "--output-format", "sarif")
    log = json.loads(out)
    Draft4Validator(SARIF_SCHEMA).validate(log)
    assert rc == 1 and log["version"] == "2.1.0"
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "EK102" and result["level"] == "error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 8
    assert result["properties"]["package"] == str(tree / "envs" / "b")
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[result["ruleIndex"]]["id"] == "EK102"


def test_sarif_with_relative_paths_keeps_them_relative(
    capsys: pytest.CaptureFixture[str], tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    _, out, _ = _run(capsys, "--output-format", "sarif")  # no PATH: the workspace's members
    (result,) = json.loads(out)["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "envs/b/nemo-environment.yaml"


def test_columns_are_1_based_in_every_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(VALID, pkg)
    manifest = pkg / "nemo-environment.yaml"
    text = manifest.read_text().replace("metadata:\n  name:", "metadata:\n  nme: x\n  name:")
    manifest.write_text(text)
    line = text.splitlines().index("  nme: x") + 1
    _, out, _ = _run(capsys, pkg, "--output-format", "json")
    (d,) = [d for d in json.loads(out)["diagnostics"] if d["code"] == "EK102"]
    assert (d["line"], d["column"]) == (line, 3)
    _, out, _ = _run(capsys, pkg, "--output-format", "github")
    assert f"line={line},col=3,title=EK102" in out
    _, out, _ = _run(capsys, pkg)
    assert f"nemo-environment.yaml:{line}:3: error[EK102]" in out
    _, out, _ = _run(capsys, pkg, "--output-format", "sarif")
    region = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": line, "startColumn": 3}


def test_yaml_syntax_errors_carry_the_parser_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(VALID, pkg)
    (pkg / "nemo-environment.yaml").write_text("format: native-v1\nconfig_paths: [a, b\n")
    _, out, _ = _run(capsys, pkg, "--output-format", "json")
    (d,) = [d for d in json.loads(out)["diagnostics"] if d["code"] == "EK101"]
    assert d["line"] is not None and d["column"] is not None and d["column"] >= 1
