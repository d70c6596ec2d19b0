"""Configuration as ruff finds it: ``envkit.toml`` or ``[tool.envkit]``, the closest one
upward from each package, per-package overrides, command-line flags win, ``--show-settings``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.validate import settings
from envkit.validate.settings import Settings, SettingsError, SettingsFiles, settings_for

ROOT = REPO_ROOT
VALID = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two packages with EK102 and EK203 each, under a repository root."""
    for name in ("a", "b"):
        pkg = tmp_path / "envs" / name
        shutil.copytree(VALID, pkg)
        manifest = pkg / "nemo-environment.yaml"
        manifest.write_text(manifest.read_text() + "version: 2\n")  # EK102
        (pkg / "pyproject.toml").write_text("[project]\n")  # EK203 (and no [tool.envkit])
    return tmp_path


def _both(repo: Path) -> tuple[Path, Path]:
    return repo / "envs" / "a", repo / "envs" / "b"


def _codes(capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict[str, set[str]]:
    rc = main(["validate", *map(str, args), "--output-format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert rc in (0, 1), report
    out: dict[str, set[str]] = {Path(p["path"]).name: set() for p in report["packages"]}
    for d in report["diagnostics"]:
        out[Path(d["package"]).name].add(d["code"])
    return out


def test_pyproject_tool_envkit_applies_to_packages_below(
    capsys: pytest.CaptureFixture[str], repo: Path
) -> None:
    (repo / "pyproject.toml").write_text('[tool.envkit]\nignore = ["EK102"]\n')
    assert _codes(capsys, *_both(repo)) == {"a": {"EK203"}, "b": {"EK203"}}


def test_closest_config_wins_and_envkit_toml_before_pyproject(
    capsys: pytest.CaptureFixture[str], repo: Path
) -> None:
    (repo / "pyproject.toml").write_text('[tool.envkit]\nignore = ["EK102"]\n')
    (repo / "envs" / "b" / "envkit.toml").write_text('ignore = ["EK203"]\n')
    assert _codes(capsys, *_both(repo)) == {"a": {"EK203"}, "b": {"EK102"}}


def test_per_package_overrides(capsys: pytest.CaptureFixture[str], repo: Path) -> None:
    (repo / "envkit.toml").write_text(
        'select = ["EK1", "EK2"]\n[per-package."envs/b"]\nextend-ignore = ["EK2"]\n')
    assert _codes(capsys, *_both(repo)) == {"a": {"EK102", "EK203"}, "b": {"EK102"}}


def test_flags_win_over_the_file(capsys: pytest.CaptureFixture[str], repo: Path) -> None:
    (repo / "envkit.toml").write_text('select = ["EK1"]\n')
    assert _codes(capsys, repo / "envs" / "a") == {"a": {"EK102"}}
    assert _codes(capsys, repo / "envs" / "a", "--select", "EK2") == {"a": {"EK203"}}
    assert _codes(capsys, repo / "envs" / "a", "--isolated") == {"a": {"EK102", "EK203"}}


def test_an_edited_settings_file_is_read_again_by_the_next_run(
    capsys: pytest.CaptureFixture[str], repo: Path
) -> None:
    """Two runs in one process (a tool that validates, edits the settings, validates again)."""
    (repo / "envkit.toml").write_text('ignore = ["EK102"]\n')
    assert _codes(capsys, repo / "envs" / "a") == {"a": {"EK203"}}
    (repo / "envkit.toml").write_text('ignore = ["EK203"]\n')
    assert _codes(capsys, repo / "envs" / "a") == {"a": {"EK102"}}


def test_one_run_reads_a_shared_settings_file_once(repo: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "envkit.toml").write_text('strict = true\n')
    read: list[Path] = []
    real_read = settings._read
    monkeypatch.setattr(settings, "_read", lambda path: read.append(path) or real_read(path))
    files = SettingsFiles()
    assert all(settings_for(pkg, Settings(), files=files).strict for pkg in _both(repo))
    # each package's own pyproject.toml (no [tool.envkit]: passed over), the shared file once
    a, b = _both(repo)
    assert read == [a / "pyproject.toml", repo / "envkit.toml", b / "pyproject.toml"]
    settings_for(a, Settings())  # another run reads them again
    assert read[3:] == [a / "pyproject.toml", repo / "envkit.toml"]


def test_strict_and_arch_from_config(repo: Path) -> None:
    (repo / "envkit.toml").write_text('strict = true\narch = "aarch64"\n')
    resolved = settings_for(repo / "envs" / "a", Settings(arch="x86_64"))
    assert resolved.strict is True and resolved.arch == "x86_64"
    assert resolved.source == repo / "envkit.toml"


@pytest.mark.parametrize(("text", "message"), [
    ('selekt = ["EK1"]\n', "unknown key `selekt`"),
    ('select = ["EK999"]\n', "unknown rule selector 'EK999'"),
    ("strict = 'yes'\n", "`strict` must be true or false"),
    ("select = [\n", "cannot read settings"),
])
def test_bad_config_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], repo: Path, text: str, message: str
) -> None:
    (repo / "envkit.toml").write_text(text)
    rc = main(["validate", *map(str, _both(repo))])
    out, err = capsys.readouterr()
    assert rc == 2 and message in err and not out


def test_show_settings(capsys: pytest.CaptureFixture[str], repo: Path) -> None:
    (repo / "envkit.toml").write_text('offline = true\ngym-version = "0.7.0"\n')
    assert main(["validate", *map(str, _both(repo)), "--show-settings", "--strict"]) == 0
    out = capsys.readouterr().out
    assert f"# {repo / 'envs' / 'a'}" in out and f"# {repo / 'envs' / 'b'}" in out
    assert "offline = true" in out and "strict = true" in out
    assert f'source = "{repo / "envkit.toml"}"' in out


def test_show_settings_prints_resolved_values(
    capsys: pytest.CaptureFixture[str], repo: Path
) -> None:
    """As ruff's --show-settings: what validation uses, not `null` where nothing was set."""
    pkg = repo / "envs" / "a"
    assert main(["validate", str(pkg), "--show-settings", "--output-format", "json"]) == 0
    (shown,) = json.loads(capsys.readouterr().out)["packages"]
    values = shown["settings"]
    assert (values["arch"], values["python"], values["glibc"]) == ("x86_64", "3.13", "2_28")
    assert values["target-source"] == "default" and values["gym-version"] == "0.7.0"
    assert (values["offline"], values["strict"], values["select"]) == (False, False, ["EK"])
    lock = {"version": "1.0", "target": "cp313-manylinux_2_34_aarch64", "wheels": []}
    (pkg / "wheels.lock").write_text(json.dumps(lock))
    assert main(["validate", str(pkg), "--show-settings", "--glibc", "2_39"]) == 0
    out = capsys.readouterr().out
    assert 'arch = "aarch64"' in out and 'glibc = "2_39"' in out  # lock's arch, flag's floor
    assert 'target = "cp313-manylinux_2_39_aarch64"' in out


def test_settings_error_is_a_value_error() -> None:
    assert issubclass(SettingsError, ValueError)


def test_dataset_and_job_files_stand_for_their_configured_package(
    capsys: pytest.CaptureFixture[str], repo: Path
) -> None:
    (repo / "data" / "b").mkdir(parents=True)
    rows = repo / "data" / "b" / "training.jsonl"
    rows.write_text("not json\n")  # EK501 in package b's dataset
    (repo / "envkit.toml").write_text(
        '[per-package."envs/b"]\ndataset = "data/b"\nselect = ["EK5"]\n')
    rc = main(["validate", str(rows), "--output-format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 1 and [p["path"] for p in report["packages"]] == [str(repo / "envs" / "b")]
    assert {d["code"] for d in report["diagnostics"]} == {"EK501"}


def test_a_package_is_resolved_as_path_resolve_resolves_it(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Its directory's realpath is taken once per run; the answer is ``resolve()``'s for
    every spelling: through a linked directory, a linked package, ``..`` inside or last, and
    relative to the working directory."""
    from envkit.validate.settings import _resolved

    files = SettingsFiles()

    (tmp_path / "real" / "pkg").mkdir(parents=True)
    (tmp_path / "real" / "other").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "linked").symlink_to(tmp_path / "real" / "other")
    monkeypatch.chdir(tmp_path)
    for spelling in ("real/pkg", "via/pkg", "via/linked", "via/pkg/../other", "via/pkg/..",
                     "via/linked/../pkg", str(tmp_path / "via" / "pkg"), "real/missing"):
        assert _resolved(Path(spelling), files) == Path(spelling).resolve(), spelling
