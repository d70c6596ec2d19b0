"""Rule selectors as ruff has them: unknown codes are usage errors, prefixes select families,
``--extend-select``/``--extend-ignore`` add to the selection, ``envkit rule`` takes prefixes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.model.diagnostics import SelectorError, parse_selectors

ROOT = REPO_ROOT
VALID = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    shutil.copytree(VALID, pkg, symlinks=True)
    manifest = pkg / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text() + "version: 2\n")  # EK102
    (pkg / "pyproject.toml").write_text("[project]\n")  # EK203
    return pkg


@pytest.mark.parametrize(("selector", "suggestion"), [
    ("EK999", None), ("EK9", "EK8"), ("EK1055", "EK105"), ("E1", None), ("XX1", None),
])
def test_unknown_selector_exits_2_with_did_you_mean(
    capsys: pytest.CaptureFixture[str], broken: Path, selector: str, suggestion: str | None
) -> None:
    rc = main(["validate", str(broken), "--select", selector])
    out, err = capsys.readouterr()
    assert rc == 2 and not out and "unknown rule selector" in err
    if suggestion:
        assert f"did you mean {suggestion!r}" in err


@pytest.mark.parametrize("flag", ["--ignore", "--extend-select", "--extend-ignore"])
def test_every_selector_flag_is_checked(
    capsys: pytest.CaptureFixture[str], broken: Path, flag: str
) -> None:
    assert main(["validate", str(broken), flag, "EK999"]) == 2


def test_extend_select_and_extend_ignore(capsys: pytest.CaptureFixture[str], broken: Path) -> None:
    def codes(*args: str) -> set[str]:
        main(["validate", str(broken), "--output-format", "json", *args])
        return {d["code"] for d in json.loads(capsys.readouterr().out)["diagnostics"]}

    assert codes("--select", "EK1", "--extend-select", "EK203") == {"EK102", "EK203"}
    assert codes("--extend-ignore", "EK102") == {"EK203"}
    assert codes("--ignore", "EK1", "--extend-ignore", "EK2") == set()


def test_parse_selectors_normalises_and_dedups() -> None:
    assert parse_selectors(["ek1, EK1", "EK204"], ["EK105", "EK204"]) == ("EK1", "EK204")
    with pytest.raises(SelectorError):
        parse_selectors(["EK3"], ["EK105"])


def test_rule_accepts_prefixes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "EK10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("EK10") for line in lines)
    assert main(["rule", "EK105"]) == 0
    assert capsys.readouterr().out.startswith("# ")
    assert main(["rule", "EK9"]) == 2  # EK8 (`envkit probe`) is the last family
    assert "did you mean" in capsys.readouterr().err
