"""converters/staging.py: the converter stages in temp dirs and installs with envkit's one
atomic install (``envkit.supply.atomic.install``)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from envkit.converters.staging import stage
from envkit.supply.atomic import InstallError, install


def _stage(stack: ExitStack, final: Path, text: str) -> Path:
    staged = stage(stack, final)
    (staged / "f.txt").write_text(text)
    return staged


def test_force_replaces_package_and_dataset_together(tmp_path: Path) -> None:
    pkg, data = tmp_path / "out" / "pkg", tmp_path / "out" / "data"
    for path in (pkg, data):
        path.mkdir(parents=True)
        (path / "f.txt").write_text("old")
    with ExitStack() as stack:
        pairs = [(_stage(stack, pkg, "new pkg"), pkg), (_stage(stack, data, "new data"), data)]
        install(pairs, replace=True)
    assert [(p / "f.txt").read_text() for p in (pkg, data)] == ["new pkg", "new data"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["data", "pkg"]


def test_without_force_an_output_that_appeared_is_kept_and_nothing_is_left(
    tmp_path: Path,
) -> None:
    """The request check refuses an existing output; one created after it (another run) is
    still not overwritten, and the staged dirs go with the stack."""
    pkg, data = tmp_path / "pkg", tmp_path / "data"
    with ExitStack() as stack:
        pairs = [(_stage(stack, pkg, "new"), pkg), (_stage(stack, data, "new"), data)]
        data.mkdir()
        (data / "f.txt").write_text("theirs")
        with pytest.raises(InstallError, match="--force"):
            install(pairs, replace=False)
    assert not pkg.exists() and (data / "f.txt").read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
