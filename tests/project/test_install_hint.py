"""The 'missing extra' hint names the install line that fits how envkit was installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.cli._extras import DIST_NAME, MissingExtra, install_hint, install_line

WHEEL = "/dl/nemo_envkit-0.1.0-py3-none-any.whl"


@pytest.mark.parametrize(("direct_url", "cwd", "line"), [
    ({"url": "file:///src/envkit", "dir_info": {"editable": True}}, "/src/envkit",
     "pip install -e '.[train]'"),
    ({"url": "file:///src/envkit", "dir_info": {"editable": True}}, "/home/me",
     "pip install -e '/src/envkit[train]'"),
    ({"url": "file:///src/envkit", "dir_info": {}}, "/src",
     "pip install './envkit[train]'"),  # not `envkit[train]`: PyPI's envkit is another project
    ({"url": "file:///src/envkit", "dir_info": {"editable": True}}, "/",
     "pip install -e './src/envkit[train]'"),
    ({"url": f"file://{WHEEL}", "archive_info": {"hashes": {}}}, "/home/me",
     f"pip install '{WHEEL}[train]'"),
    ({"url": "https://git.example.com/org/envkit.git",
      "vcs_info": {"vcs": "git", "requested_revision": "v0.1.0", "commit_id": "abc"}}, "/",
     "pip install 'nemo-envkit[train] @ git+https://git.example.com/org/envkit.git@v0.1.0'"),
    ({"url": "https://files.example.com/nemo_envkit-0.1.0-py3-none-any.whl",
      "archive_info": {}}, "/",
     "pip install 'nemo-envkit[train] @ https://files.example.com/nemo_envkit-0.1.0-py3-none-any.whl'"),
    ({}, "/", "pip install 'nemo-envkit[train]'"),
])
def test_install_line_follows_pep_610(direct_url: dict, cwd: str, line: str) -> None:
    assert install_line("train", direct_url, cwd=Path(cwd)) == line


def test_this_checkout_gets_the_editable_line(monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    assert install_hint("train") == "pip install -e '.[train]'"
    assert MissingExtra("train", "train", ("torch",)).hint == "pip install -e '.[train]'"
    assert DIST_NAME == "nemo-envkit"


def test_doctests() -> None:
    import doctest

    from envkit.cli import _extras
    from envkit.model import diagnostics

    for module in (_extras, diagnostics):
        assert doctest.testmod(module).failed == 0, module.__name__
