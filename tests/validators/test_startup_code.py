"""EK409: a vendored wheel that installs a ``.pth`` file with a line ``site`` executes (one
starting with ``import``) is named, with the file; path-only ``.pth`` files and ``.pth``
members that do not land in site-packages are not."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from wheelfactory import make_wheel

from envkit.model.wheelfile import read_wheel
from envkit.supply import wheelfacts
from envkit.supply.wheelfacts import WheelFacts
from envkit.validate.validate import ValidateRequest, validate

FIXTURE = REPO_ROOT / "fixtures" / "packages" / "EK409-pth-runs-code" / "pkg"


@pytest.mark.parametrize(("member", "text", "runs"), [
    ("hook.pth", b"import os; os.system('id')\n", True),
    ("hook.pth", b"# comment\nsome/dir\nimport\tsys\n", True),
    ("demo-1.0.data/purelib/hook.pth", b"import os\n", True),
    ("demo-1.0.data/platlib/hook.pth", b"import os\n", True),
    ("paths.pth", b"# only paths\nextra\nimportant_dir\n", False),
    ("demo/inside.pth", b"import os\n", False),  # not site-packages' own: site never reads it
    ("demo-1.0.data/scripts/hook.pth", b"import os\n", False),
])
def test_a_pth_runs_code_only_with_an_import_line_in_site_packages(
        tmp_path: Path, member: str, text: bytes, runs: bool) -> None:
    wheel = make_wheel(tmp_path, "demo", files={member: text})
    assert read_wheel(wheel).startup_code == ((member,) if runs else ())


def test_the_fixture_names_the_wheel_and_the_file() -> None:
    [found] = validate(ValidateRequest(package=FIXTURE)).diagnostics
    assert found.code == "EK409" and found.severity.value == "warning"
    assert found.path == "wheels/echo_scorer-1.0-py3-none-any.whl"
    assert "echo_scorer_hook.pth" in found.message and "echo_scorer_paths.pth" not in found.message


def test_the_wheel_facts_store_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wheelfacts, "RACY_S", 0.0)
    wheel = make_wheel(tmp_path / "w", "demo", files={"hook.pth": b"import os\n"})
    WheelFacts(tmp_path / "store").read(wheel)
    again = WheelFacts(tmp_path / "store")
    assert again.read(wheel).startup_code == ("hook.pth",) and again.hits == 1


SETUPTOOLS_HOOK = (b"import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, "
                   b"'local') == 'local'; enabled and __import__('_distutils_hack').add_shim(); \n")


def test_an_audited_hook_passes_only_byte_for_byte_under_its_own_project(tmp_path: Path) -> None:
    """setuptools' own ``distutils-precedence.pth`` (in nearly every Gym closure) is not
    reported; the same bytes in another project, or one byte changed, are."""
    member = "distutils-precedence.pth"
    own = make_wheel(tmp_path / "a", "setuptools", files={member: SETUPTOOLS_HOOK})
    other = make_wheel(tmp_path / "b", "setuptoolz", files={member: SETUPTOOLS_HOOK})
    edited = make_wheel(tmp_path / "c", "setuptools",
                        files={member: SETUPTOOLS_HOOK.replace(b"add_shim", b"add_shim2")})
    assert read_wheel(own).startup_code == ()
    assert read_wheel(other).startup_code == (member,)
    assert read_wheel(edited).startup_code == (member,)
