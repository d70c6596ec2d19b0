"""What ``envkit profile`` leaves on disk: ``profile.jsonl`` and, with ``--keep``, a curated
dataset directory.

Why atomic: the curated dataset is an input of ``envkit train``; a crash or a Ctrl-C must
never leave a dataset with half its rows.
"""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING

from envkit.gym import load_rows
from envkit.model.provenance import PROVENANCE_NAME
from envkit.supply.atomic import make_temp_dir, swap_into_place, write_files, write_text

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path

    from envkit.model.provenance import Provenance
    from envkit.profile.analysis import RowProfile

__all__ = ["PROFILE_NAME", "write_curated", "write_profile"]

PROFILE_NAME = "profile.jsonl"


def write_profile(out_dir: Path, rows: Iterable[RowProfile]) -> Path:
    """``out_dir/profile.jsonl``: one line per row, in dataset order, whole or not at all."""
    text = "".join(json.dumps(row.to_dict()) + "\n" for row in rows)
    return write_text(out_dir / PROFILE_NAME, text)


def write_curated(dest: Path, source: Path, kept: Mapping[str, Iterable[int]],
                  provenance: Provenance) -> Path:
    """``dest`` as a dataset: each split's kept rows of ``source``, and ``provenance.json``; an
    existing ``dest`` is replaced in one step.

    :raises OSError: the source cannot be read or ``dest`` not written.
    """
    files: dict[str, Path | bytes] = {PROVENANCE_NAME: provenance.dumps().encode()}
    for split, indices in kept.items():
        rows = load_rows(source, split)
        text = "".join(json.dumps(rows[i], ensure_ascii=False) + "\n" for i in indices)
        files[f"{split}.jsonl"] = text.encode()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(dest)
    try:
        write_files(tmp, files)
        swap_into_place(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
