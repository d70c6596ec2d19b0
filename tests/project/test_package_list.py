"""Every importable folder of envkit is in ``[tool.setuptools] packages`` (fast).

The list is explicit (the design card's folders map onto ``envkit.*``), so a new sub-package
that is not added ships without its code: the editable install finds it, the wheel does not.
The slow packaging tests install the wheel; this says it in a second.
"""

from __future__ import annotations

import tomllib

from support.paths import REPO_ROOT

FOLDERS = {"envkit": "envkit", "envkit.validators": "validators",
           "envkit.converters": "converters", "envkit.trainer": "trainer"}


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    assert config["package-dir"] == FOLDERS
    found = set()
    for name, folder in FOLDERS.items():
        for init in (REPO_ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO_ROOT / folder)
            found.add(".".join((name, *rel.parts)))
    missing = sorted(found - set(config["packages"]))
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
