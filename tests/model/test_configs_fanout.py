"""``read_configs``: the includes of each config, however many configs list the same paths."""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.model._configs import read_configs
from envkit.model._walk import FileEntry

if TYPE_CHECKING:
    from pathlib import Path


def _write(root: Path, files: dict[str, str]) -> dict[str, FileEntry]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return {rel: FileEntry(rel, "file", size=len(text)) for rel, text in files.items()}


def test_includes_seen_before_and_new_ones_normalise_alike(tmp_path: Path) -> None:
    listed = "config_paths:\n  - c/a.yaml\n  - ./c/b.yaml\n  - /abs.yaml\n"
    entries = _write(tmp_path, {
        "c/a.yaml": listed,  # every string new
        "c/b.yaml": listed + "  - c//a.yaml\n",  # all seen, then one new
        "c/c.yaml": listed + "  - 7\n  - [x]\n  - c/b.yaml\n",  # seen, then not strings
        "c/d.yaml": "config_paths:\n  - ./c/b.yaml\n  - c/a.yaml\n  - ./c/b.yaml\n",  # all seen
    })
    found = read_configs(tmp_path, entries, ["c/a.yaml", "c/c.yaml", "c/d.yaml"], [])
    assert found.includes == {
        "c/a.yaml": ("c/a.yaml", "c/b.yaml"),
        "c/c.yaml": ("c/a.yaml", "c/b.yaml"),
        "c/d.yaml": ("c/b.yaml", "c/a.yaml"),
        "c/b.yaml": ("c/a.yaml", "c/b.yaml"),
    }
