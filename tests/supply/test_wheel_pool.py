"""``pool_wheels``: a package's wheels are offered to uv from one stable path per content.

uv keys its unpacked copy of a find-links wheel by URL; these tests pin the property that
makes that copy shared: the same bytes, wherever a package sits, come back as the same path.
"""

from __future__ import annotations

import hashlib
import stat
import sys
from typing import TYPE_CHECKING

from envkit.gym.install import RunPaths, gym_env, offline_install
from envkit.supply.wheelcache import WheelCache, link_or_copy, pool_wheels

if TYPE_CHECKING:
    from pathlib import Path


def _wheel(folder: Path, name: str = "demo-1.0-py3-none-any.whl", body: bytes = b"PK-1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(body)
    return path


def test_same_bytes_in_two_packages_are_offered_from_one_path(tmp_path: Path) -> None:
    cache = WheelCache.under(tmp_path / "cache")
    first = pool_wheels([_wheel(tmp_path / "a" / "wheels")], cache)
    second = pool_wheels([_wheel(tmp_path / "b" / "wheels")], cache)
    assert first == second
    sha = hashlib.sha256(b"PK-1").hexdigest()
    assert first == [cache.path_for(sha, "demo-1.0-py3-none-any.whl")]
    assert first[0].read_bytes() == b"PK-1"


def test_a_copied_in_wheel_is_read_only_and_the_package_file_is_untouched(tmp_path: Path) -> None:
    cache = WheelCache.under(tmp_path / "cache")
    mine = _wheel(tmp_path / "pkg" / "wheels")
    mode = stat.S_IMODE(mine.stat().st_mode)
    [pooled] = pool_wheels([mine], cache)
    assert not pooled.samefile(mine)  # a copy: editing the package never edits the store
    assert stat.S_IMODE(pooled.stat().st_mode) == 0o444
    assert stat.S_IMODE(mine.stat().st_mode) == mode
    assert not list(cache.root.glob(".adopt-*"))  # no temp file left behind


def test_a_wheel_linked_from_the_store_is_found_by_inode_not_read(tmp_path: Path) -> None:
    cache = WheelCache.under(tmp_path / "cache")
    stored = cache.path_for("ab" * 32, "demo-1.0-py3-none-any.whl")  # not its real sha256
    _wheel(stored.parent)
    linked = tmp_path / "pkg" / "wheels" / stored.name
    linked.parent.mkdir(parents=True)
    link_or_copy(stored, linked)
    if linked.stat().st_nlink < 2:  # pragma: no cover - a filesystem without hard links
        return
    assert pool_wheels([linked], cache) == [stored]


def test_different_bytes_under_one_name_stay_apart(tmp_path: Path) -> None:
    cache = WheelCache.under(tmp_path / "cache")
    [one] = pool_wheels([_wheel(tmp_path / "a", body=b"one")], cache)
    [two] = pool_wheels([_wheel(tmp_path / "b", body=b"two")], cache)
    assert one != two and one.name == two.name
    assert (one.read_bytes(), two.read_bytes()) == (b"one", b"two")


def test_gym_sees_the_pooled_folders_as_its_find_links(tmp_path: Path) -> None:
    cache = WheelCache.under(tmp_path / "cache")
    pooled = pool_wheels([_wheel(tmp_path / "w", "a-1-py3-none-any.whl", b"a"),
                          _wheel(tmp_path / "w", "b-1-py3-none-any.whl", b"b")], cache)
    folders = sorted({p.parent for p in pooled})

    class _Gym:  # the two attributes gym_env reads
        python = sys.executable
        bin = tmp_path / "bin"

    env = gym_env(_Gym(), RunPaths(tmp_path / "run", tmp_path / "ray"),  # type: ignore[arg-type]
                  tmp_path / "uv.toml", folders)
    assert env["UV_FIND_LINKS"].split(",") == [str(f) for f in folders]
    native = gym_env(_Gym(), RunPaths(tmp_path / "run", tmp_path / "ray"),  # type: ignore[arg-type]
                     tmp_path / "uv.toml")
    assert "UV_FIND_LINKS" not in native


def test_the_offline_install_of_no_wheels_runs_nothing(tmp_path: Path) -> None:
    offline_install([], tmp_path / "venvs", {})  # no uv call: env has no UV_CONFIG_FILE
