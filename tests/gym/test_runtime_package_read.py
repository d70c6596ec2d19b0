"""The Gym runtime reads a package as validation does: a start after an earlier one reads none of
the package's unchanged large files to compute the digest its provenance record is checked
against (a wheels-v1 package is hundreds of MB of wheels)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from toy_envs import make_native_package

from envkit.gym.servers import launchable
from envkit.model import tree
from envkit.supply import treestamps
from envkit.supply.treestamps import MIN_BYTES


def test_a_second_start_reads_no_unchanged_large_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(treestamps, "RACY_S", 0.0)  # no one can set a ctime: it is now here
    pkg = make_native_package(tmp_path / "p")
    blob = pkg / "resources_servers" / "char_pattern" / "data.bin"
    blob.write_bytes(b"\0" * (MIN_BYTES + 1))
    (pkg / "provenance.json").write_text("{}\n")  # any record: the digest is taken
    for path in (blob, pkg / "provenance.json"):
        os.utime(path, ns=(time.time_ns() - 60 * 10**9,) * 2)  # older than the racy window
    first = launchable(pkg)

    read: list[str] = []
    real = tree.sha256_file
    monkeypatch.setattr(tree, "sha256_file", lambda path: read.append(str(path)) or real(path))
    second = launchable(pkg)

    assert first.provenance is not None and second.provenance is not None
    assert second.provenance.actual == first.provenance.actual
    assert second.provenance.actual is not None
    assert str(blob) not in read
