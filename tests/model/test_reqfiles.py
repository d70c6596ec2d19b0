"""``requirements.txt`` read as pip and uv read it: ``-r`` includes are followed (relative to
the including file), ``-c`` constraints add no roots, continuations and options are handled,
and the package model reads the included files (in-package regular files only)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.model.package import load_package
from envkit.model.reqfiles import include_target, requirements_txt_roots
from envkit.model.target import Target
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions

OFFLINE = (REPO_ROOT / "fixtures" / "packages"
           / "valid-wheels-v1-offline" / "pkg")
SERVER = "resources_servers/echo_match"


@pytest.mark.parametrize(("line", "expected"), [
    ("-r base.txt", ("-r", "base.txt")), ("-rbase.txt", ("-r", "base.txt")),
    ("--requirement base.txt", ("-r", "base.txt")), ("--requirement=b.txt", ("-r", "b.txt")),
    ("-c c.txt", ("-c", "c.txt")), ("--constraint=c.txt", ("-c", "c.txt")),
    ("requests", None), ("--hash=sha256:x", None), ("-e ./x", None),
])
def test_include_target(line: str, expected: tuple[str, str] | None) -> None:
    assert include_target(line) == expected


def test_includes_are_followed_relative_to_the_including_file() -> None:
    includes = {
        "base.txt": "six>=1\n-r sub/more.txt\n-r requirements.txt  # a cycle\n",
        "sub/more.txt": "attrs \\\n  ==23.1 --hash=sha256:x\n-r ../base.txt\n",
        "constraints.txt": "pinned==1.0\n",
    }
    text = "-c constraints.txt\n-r base.txt\nrequests\n-r missing.txt\n-r ../../up.txt\n"
    roots, egress = requirements_txt_roots(text, "srv/requirements.txt", includes)
    assert [(str(r.requirement), r.path, r.line) for r in roots] == [
        ("requests", "srv/requirements.txt", 3),
        ("six>=1", "srv/base.txt", 1),
        ("attrs==23.1", "srv/sub/more.txt", 1),
    ]
    assert roots[2].origin == "srv/sub/more.txt:1" and egress == []


def _offline_pkg(tmp_path: Path) -> Path:
    return Path(shutil.copytree(OFFLINE, tmp_path / "pkg", symlinks=True))


def test_a_missing_wheel_behind_an_include_is_found(tmp_path: Path) -> None:
    pkg = _offline_pkg(tmp_path)
    server = pkg / SERVER
    (server / "requirements.txt").write_text("-e nemo-gym[dev] @ ../../\n-r base.txt\n")
    (server / "base.txt").write_text("echo-scorer==1.0\nnot-vendored-anywhere==3.1\n")
    report = validate(ValidateRequest(package=pkg, options=CheckOptions(Target(), offline=True)))
    missing = [d for d in report.diagnostics if d.code == "EK403"]
    assert len(missing) == 1 and "not-vendored-anywhere" in missing[0].message
    assert missing[0].path == f"{SERVER}/base.txt" and missing[0].line == 2


def test_package_reads_only_in_package_regular_includes(tmp_path: Path) -> None:
    pkg = _offline_pkg(tmp_path)
    server = pkg / SERVER
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (server / "link.txt").symlink_to(outside)
    (server / "requirements.txt").write_text(
        "-r link.txt\n-r ../../../outside.txt\n-c ../shared/c.txt\n-r nested/a.txt\n")
    (pkg / "resources_servers" / "shared").mkdir()
    (pkg / "resources_servers" / "shared" / "c.txt").write_text("x==1\n")
    (server / "nested").mkdir()
    (server / "nested" / "a.txt").write_text("-r b.txt\n")
    (server / "nested" / "b.txt").write_text("six\n")
    (texts,) = [s.texts for s in load_package(pkg).servers if s.path == SERVER]
    assert sorted(texts) == ["../shared/c.txt", "nested/a.txt", "nested/b.txt",
                             "requirements.txt"]
