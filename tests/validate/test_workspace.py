"""Many packages in one run are explicit: ``packages = [...]`` makes a workspace root, as uv and
cargo name workspace members; any other directory without a manifest is no package (EK100),
never a tree searched for packages to pass instead (the platform rejects such a directory)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.validate.discovery import discover

CASES = REPO_ROOT / "fixtures" / "packages"
VALID = CASES / "valid-native-v1" / "pkg"
PARENT = CASES / "EK100-nested-manifest" / "pkg"
"""A directory whose package sits one level down: an archive unpacked one level too deep."""


def _json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, dict]:
    rc = main(["validate", *map(str, args), "--output-format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _repo(root: Path, names: tuple[str, ...], packages: str | None = None) -> Path:
    for name in names:
        shutil.copytree(VALID, root / name)
    if packages is not None:
        (root / "envkit.toml").write_text(f"packages = {packages}\n")
    return root


def test_a_parent_directory_is_no_package(capsys: pytest.CaptureFixture[str]) -> None:
    """The false pass: the package one level down used to be found and passed."""
    rc, report = _json(capsys, PARENT)
    assert rc == 1 and report["valid"] is False
    (package,) = report["packages"]
    assert package["path"] == str(PARENT) and package["valid"] is False
    (ek100,) = report["diagnostics"]
    assert ek100["code"] == "EK100" and ek100["path"] == "nemo-environment.yaml"
    assert f"`{PARENT.as_posix()}/echo-match` one directory down" in ek100["message"]
    assert f"envkit validate {PARENT.as_posix()}/echo-match/" in ek100["hint"]


def test_ek100_hint_names_the_packages_below_and_the_workspace_setting(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _repo(tmp_path / "repo", ("envs/a", "envs/b", "tools/c"))
    (root / "envs" / "b" / "configs").mkdir(exist_ok=True)
    rc, report = _json(capsys, root)
    (ek100,) = report["diagnostics"]
    assert rc == 1 and ek100["code"] == "EK100"
    base = root.as_posix()
    assert f"3 packages lie below it: {base}/envs/a, {base}/envs/b, {base}/tools/c" in (
        ek100["message"])
    assert f"envkit validate {base}/envs/a/ {base}/envs/b/ {base}/tools/c/" in ek100["hint"]
    assert 'packages = ["envs/*", "tools/c"]' in ek100["hint"]  # a glob only where all are
    assert "envkit.toml" in ek100["hint"]
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    _, report = _json(capsys, root)
    assert "under `[tool.envkit]` in its pyproject.toml" in report["diagnostics"][0]["hint"]


def test_a_directory_inside_a_package_names_the_package_root(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = _repo(tmp_path, ("pkg",)) / "pkg"
    monkeypatch.chdir(pkg / "resources_servers")
    rc, report = _json(capsys)
    (ek100,) = report["diagnostics"]
    assert rc == 1 and "lies inside the package `..`" in ek100["message"]
    assert "envkit validate ../" in ek100["hint"]


def test_ek100_stands_whatever_the_selection_and_the_dataset_is_still_checked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "training.jsonl").write_text("not json\n")  # EK501
    rc, report = _json(capsys, PARENT, "--ignore", "EK1", "--dataset", data)
    assert rc == 1 and [d["code"] for d in report["diagnostics"]] == ["EK100", "EK501"]


def test_workspace_members_by_glob_and_literal(tmp_path: Path) -> None:
    root = _repo(tmp_path, ("envs/b", "envs/a", "more/x/env", ".hidden/y", "extra"),
                 '["envs/*", "more/**/env", "*", "extra"]')
    (root / "envs" / "README.md").write_text("not a directory: never a member\n")
    members = discover([root]).packages
    assert members == (root / "envs" / "a", root / "envs" / "b", root / "more" / "x" / "env",
                       root / "envs", root / "extra", root / "more")  # sorted per pattern
    assert discover([root], ["envs"]).packages[0] == root / "envs" / "a"  # --exclude by name


def test_a_member_without_a_manifest_is_reported_not_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """As uv and cargo refuse a member without its manifest: a glob is a claim."""
    root = _repo(tmp_path, ("envs/a",), '["envs/*"]')
    (root / "envs" / "unpacked" / "inner").mkdir(parents=True)
    shutil.copytree(VALID, root / "envs" / "unpacked" / "inner", dirs_exist_ok=True)
    rc, report = _json(capsys, root)
    assert rc == 1 and [p["valid"] for p in report["packages"]] == [True, False]
    (ek100,) = report["diagnostics"]
    assert ek100["package"] == str(root / "envs" / "unpacked")
    assert "one directory down" in ek100["message"]


def test_no_path_at_a_workspace_root_validates_its_members_each_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path, ("envs/a", "envs/b"), '["envs/*"]')
    manifest = root / "envs" / "b" / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text() + "version: 2\n")  # EK102
    monkeypatch.chdir(root)
    rc = main(["validate"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "envs/a\n" in out and "envs/b\n" in out  # one section each, named by path
    assert "envs/b/nemo-environment.yaml:8:1:" in out
    assert out.rstrip().splitlines()[-1].endswith(
        "2 packages checked, 1 valid, 1 invalid; 1 error, 0 warnings")


def test_no_path_in_a_package_validates_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_repo(tmp_path, ("pkg",)) / "pkg")
    rc, report = _json(capsys)
    assert rc == 0 and report["format"] == "native-v1"
    assert [p["path"] for p in report["packages"]] == ["."]


def test_no_path_elsewhere_is_ek100_with_the_packages_below(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_repo(tmp_path, ("envs/a", "envs/b")))
    rc, report = _json(capsys)
    (ek100,) = report["diagnostics"]
    assert rc == 1 and ek100["code"] == "EK100"
    assert "2 packages lie below it: envs/a, envs/b" in ek100["message"]
    assert 'packages = ["envs/*"]' in ek100["hint"]


def test_no_path_with_only_a_dataset_checks_the_dataset(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "training.jsonl").write_text("not json\n")
    monkeypatch.chdir(tmp_path)
    rc, report = _json(capsys, "--dataset", ".")
    assert rc == 1 and [d["code"] for d in report["diagnostics"]] == ["EK501"]


def test_isolated_ignores_the_workspace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _repo(tmp_path, ("envs/a",), '["envs/*"]')
    rc, report = _json(capsys, root, "--isolated")
    assert rc == 1 and report["diagnostics"][0]["code"] == "EK100"


@pytest.mark.parametrize(("text", "message"), [
    ('packages = ["envs/missing"]\n', "'envs/missing' is not a directory"),
    ('packages = ["nothing/*"]\n', "matches no directory"),
    ("packages = [1]\n", "`packages` must be a list of directory globs"),
    ('packages = ["../elsewhere/*"]\n', "stay below it"),
    ('packages = ["/abs/*"]\n', "stay below it"),
    ('[per-package."envs/a"]\npackages = ["x"]\n', "belongs at the top level"),
])
def test_a_workspace_that_cannot_be_used_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    root = _repo(tmp_path, ("envs/a",))
    (root / "envkit.toml").write_text(text)
    rc = main(["validate", str(root)])
    out, err = capsys.readouterr()
    assert rc == 2 and message in err and not out


def test_pyproject_tool_envkit_packages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = _repo(tmp_path, ("envs/a", "envs/b"))
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.envkit]\n'
                                         'packages = ["envs/*"]\nignore = ["EK113"]\n')
    rc, report = _json(capsys, root)
    assert rc == 0 and [Path(p["path"]).name for p in report["packages"]] == ["a", "b"]


def test_touched_files_map_to_their_package_in_a_workspace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the pre-commit hook passes: files; the workspace root's own files are no package's."""
    root = _repo(tmp_path, ("envs/a", "envs/b"), '["envs/*"]')
    monkeypatch.chdir(root)
    touched = ("envs/b/resources_servers/echo_match/app.py", "README.md")
    (root / "README.md").write_text("hi\n")
    rc, report = _json(capsys, "--ignore-unowned-files", *touched)
    assert rc == 0 and [p["path"] for p in report["packages"]] == ["envs/b"]


def test_a_touched_workspace_config_stands_for_every_member(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its settings can change each member's verdict (``ignore = [...]`` removed, say)."""
    root = _repo(tmp_path, ("envs/a", "envs/b"), '["envs/*"]')
    monkeypatch.chdir(root)
    rc, report = _json(capsys, "--ignore-unowned-files", "envkit.toml")
    assert rc == 0 and [p["path"] for p in report["packages"]] == ["envs/a", "envs/b"]


def test_settings_show_every_member(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_repo(tmp_path, ("envs/a", "envs/b"), '["envs/*"]'))
    assert main(["validate", "--show-settings"]) == 0
    out = capsys.readouterr().out
    assert "# envs/a\n" in out and "# envs/b\n" in out


def test_submit_accepts_only_a_package_root(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--env parent/`` is refused before anything is uploaded, with validate's EK100."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "training.jsonl").write_text("{}\n")
    rc = main(["submit", str(REPO_ROOT / "examples" / "tiny_grpo.json"), "--env", str(PARENT),
               "--dataset", str(data), "--base-url", "http://127.0.0.1:9"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["error"]["kind"] == "invalid" and "nothing was uploaded" in (
        out["error"]["message"])
    assert [d["code"] for d in out["diagnostics"] if d["code"] == "EK100"] == ["EK100"]


@pytest.mark.parametrize("kind", ["dangling symlink", "directory"])
def test_a_manifest_of_any_kind_makes_a_package_root(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    """The entry is the package's manifest, broken: the rules say how (EK101/EK207), not EK100."""
    pkg = _repo(tmp_path, ("pkg",)) / "pkg"
    manifest = pkg / "nemo-environment.yaml"
    manifest.unlink()
    if kind == "directory":
        manifest.mkdir()
    else:
        manifest.symlink_to("nowhere.yaml")
    rc, report = _json(capsys, pkg)
    codes = {d["code"] for d in report["diagnostics"]}
    assert rc == 1 and "EK101" in codes and "EK100" not in codes
    if kind != "directory":  # what pre-commit passes (files) maps to the package too
        assert discover([manifest]).packages == (pkg,)


def test_excluding_every_member_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _repo(tmp_path, ("envs/a",), '["envs/*"]')
    rc = main(["validate", str(root), "--exclude", "a"])
    out, err = capsys.readouterr()
    assert rc == 2 and not out and "`--exclude` skips every package the paths name" in err
