"""The rule reference site: generated from the registry, built strict with MkDocs, links
checked offline; a diagnostic links to it only when ``docs-url`` says where it is served."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import FIXTURES, REPO_ROOT

from envkit.cli import main
from envkit.model.diagnostics import rule_url
from envkit.validators import RULES

BROKEN = FIXTURES / "packages" / "EK102-unknown-top-level-key" / "pkg"


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d",
                           str(out)], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return out


def _package(tmp_path: Path, docs_url: str | None) -> Path:
    pkg = tmp_path / "pkg"
    shutil.copytree(BROKEN, pkg)
    if docs_url is not None:
        (tmp_path / "envkit.toml").write_text(f'docs-url = "{docs_url}"\n')
    return pkg


def _validate(capsys: pytest.CaptureFixture[str], pkg: Path, fmt: str) -> dict:
    main(["validate", str(pkg), "--output-format", fmt])
    return json.loads(capsys.readouterr().out)


def test_rule_pages_are_generated_from_the_registry() -> None:
    proc = _script("scripts/gen_rule_docs.py", "--check")
    assert proc.returncode == 0, proc.stderr
    pages = {p.stem for p in (REPO_ROOT / "docs" / "rules").glob("EK*.md")}
    assert pages == {*RULES, "EK000"}


def test_without_docs_url_a_diagnostic_carries_no_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    pkg = _package(tmp_path, None)
    report = _validate(capsys, pkg, "json")
    assert report["diagnostics"] and all(d["url"] is None for d in report["diagnostics"])
    sarif = _validate(capsys, pkg, "sarif")
    assert all("helpUri" not in r for r in sarif["runs"][0]["tool"]["driver"]["rules"])


def test_with_docs_url_every_link_is_a_page_of_the_built_site(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    pkg = _package(tmp_path, site.as_uri() + "/")
    urls = [d["url"] for d in _validate(capsys, pkg, "json")["diagnostics"]]
    sarif = _validate(capsys, pkg, "sarif")
    urls += [r["helpUri"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]]
    assert urls and all(url.startswith(site.as_uri() + "/rules/EK") for url in urls)
    assert all((site / url.removeprefix(site.as_uri() + "/")).is_file() for url in urls)


def test_docs_url_must_be_a_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = _package(tmp_path, "docs/site")
    assert main(["validate", str(pkg)]) == 2
    assert "docs-url" in capsys.readouterr().err


def test_link_check_passes_over_the_site_the_rule_urls_and_the_sources(site: Path) -> None:
    proc = _script("scripts/check_links.py", str(site))
    assert proc.returncode == 0, proc.stderr
    assert all((site / "rules" / f"{code}.html").is_file() for code in RULES)


def test_link_check_finds_a_dead_link(site: Path, tmp_path: Path) -> None:
    broken = tmp_path / "site"
    shutil.copytree(site, broken)
    (broken / "rules" / "EK105.html").unlink()
    proc = _script("scripts/check_links.py", str(broken))
    assert proc.returncode == 1
    assert "rules/EK105.html" in proc.stderr and "EK105" in proc.stderr


def test_rule_url_joins_without_doubling_slashes() -> None:
    assert rule_url("EK1", "https://a.example.com/") == "https://a.example.com/rules/EK1.html"
