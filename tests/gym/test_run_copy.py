"""A run's copy of the package: wheels symlinked (a 400 MB wheels-v1 package costs nothing per
run, and the wheels' stat, which the stores key them by, does not move), every other file
copied (Gym may write beside the configs, never into the user's package)."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from envkit.supply.wheelcache import link_wheels

if TYPE_CHECKING:
    from pathlib import Path


def test_wheels_are_linked_and_configs_copied(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "wheels").mkdir(parents=True)
    source = pkg / "wheels" / "a-1.0-py3-none-any.whl"
    source.write_bytes(b"PK wheel")
    (pkg / "nemo-environment.yaml").write_text("format: wheels-v1\n")
    before = source.stat()
    run = tmp_path / "run"
    shutil.copytree(pkg, run, copy_function=link_wheels)
    wheel, copied = run / "wheels" / "a-1.0-py3-none-any.whl", run / "nemo-environment.yaml"
    assert wheel.is_symlink() and wheel.resolve() == source.resolve()
    assert wheel.read_bytes() == b"PK wheel"
    shutil.rmtree(run / "wheels")  # the run's copy goes; the package's wheel is as it was
    after = source.stat()
    assert (after.st_ctime_ns, after.st_nlink) == (before.st_ctime_ns, before.st_nlink)
    assert copied.stat().st_ino != (pkg / "nemo-environment.yaml").stat().st_ino
    copied.write_text("changed\n")
    assert (pkg / "nemo-environment.yaml").read_text() == "format: wheels-v1\n"
