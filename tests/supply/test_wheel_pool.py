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
from envkit.supply.cache import file_sha256
from envkit.supply.wheelcache import WheelCache, link_or_copy, pool_wheels

if TYPE_CHECKING:
    from pathlib import Path


def _pool(wheels: list[Path], offer: WheelCache) -> list[Path]:
    """``pool_wheels`` with each wheel's digest, as the Gym runtime passes them."""
    return pool_wheels([(wheel, file_sha256(wheel)) for wheel in wheels], offer)


def _wheel(folder: Path, name: str = "demo-1.0-py3-none-any.whl", body: bytes = b"PK-1") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(body)
    return path


def test_same_bytes_in_two_packages_are_offered_from_one_path(tmp_path: Path) -> None:
    offer = WheelCache.offer_under(tmp_path / "cache")
    first = _pool([_wheel(tmp_path / "a" / "wheels")], offer)
    second = _pool([_wheel(tmp_path / "b" / "wheels")], offer)
    assert first == second
    sha = hashlib.sha256(b"PK-1").hexdigest()
    assert first == [offer.path_for(sha, "demo-1.0-py3-none-any.whl")]
    assert first[0].read_bytes() == b"PK-1"


def test_the_offered_file_is_a_read_only_copy_nothing_links(tmp_path: Path) -> None:
    """uv revalidates its unpacked copy by the file's ctime, and a new hard link to a file
    changes it: the offered file is a copy of its own, so linking the package's wheel (a run
    copy, another build) never invalidates what uv unpacked."""
    offer = WheelCache.offer_under(tmp_path / "cache")
    stored = WheelCache.under(tmp_path / "cache").path_for("ab" * 32, "demo-1.0-py3-none-any.whl")
    mine = _wheel(stored.parent)
    mode = stat.S_IMODE(mine.stat().st_mode)
    [pooled] = _pool([mine], offer)
    assert not pooled.samefile(mine) and pooled.stat().st_nlink == 1
    assert stat.S_IMODE(pooled.stat().st_mode) == 0o444
    assert stat.S_IMODE(mine.stat().st_mode) == mode
    ctime = pooled.stat().st_ctime_ns
    link_or_copy(mine, tmp_path / "run-copy.whl")
    assert _pool([mine], offer) == [pooled]
    assert pooled.stat().st_ctime_ns == ctime
    assert not list(offer.root.glob(".offer-*"))  # no temp file left behind


def test_different_bytes_under_one_name_stay_apart(tmp_path: Path) -> None:
    offer = WheelCache.offer_under(tmp_path / "cache")
    [one] = _pool([_wheel(tmp_path / "a", body=b"one")], offer)
    [two] = _pool([_wheel(tmp_path / "b", body=b"two")], offer)
    assert one != two and one.name == two.name
    assert (one.read_bytes(), two.read_bytes()) == (b"one", b"two")


def test_a_rewritten_wheel_is_hashed_again(tmp_path: Path) -> None:
    """The digest memo is keyed by the file's stat: new bytes at one path are new bytes."""
    offer = WheelCache.offer_under(tmp_path / "cache")
    wheel = _wheel(tmp_path / "w", body=b"first")
    [before] = _pool([wheel], offer)
    wheel.unlink()
    _wheel(tmp_path / "w", body=b"second, longer")
    [after] = _pool([wheel], offer)
    assert before != after and after.read_bytes() == b"second, longer"


def test_gym_sees_the_pooled_folders_as_its_find_links(tmp_path: Path) -> None:
    offer = WheelCache.offer_under(tmp_path / "cache")
    pooled = _pool([_wheel(tmp_path / "w", "a-1-py3-none-any.whl", b"a"),
                          _wheel(tmp_path / "w", "b-1-py3-none-any.whl", b"b")], offer)
    folders = sorted({p.parent for p in pooled})

    class _Gym:  # the two attributes gym_env reads
        python = sys.executable
        bin = tmp_path / "bin"

    env = gym_env(_Gym(), RunPaths(tmp_path / "run", tmp_path / "ray"),  # type: ignore[arg-type]
                  tmp_path / "uv.toml", tmp_path / "uv", folders)
    assert env["UV_FIND_LINKS"].split(",") == [str(f) for f in folders]
    native = gym_env(_Gym(), RunPaths(tmp_path / "run", tmp_path / "ray"),  # type: ignore[arg-type]
                     tmp_path / "uv.toml", tmp_path / "uv")
    assert "UV_FIND_LINKS" not in native


def test_the_offline_install_of_no_wheels_runs_nothing(tmp_path: Path) -> None:
    offline_install([], tmp_path / "venvs", {})  # no uv call: env has no UV_CONFIG_FILE


def test_a_stored_download_is_used_only_while_its_bytes_match_its_sha256(tmp_path: Path) -> None:
    """A download store restored from elsewhere (a CI cache) or edited is checked by hash on
    use: a file whose bytes no longer match the sha256 it is filed under is fetched again."""
    store = WheelCache(tmp_path / "wheels")
    source = tmp_path / "demo-1.0-py3-none-any.whl"
    source.write_bytes(b"the real bytes")
    sha = hashlib.sha256(b"the real bytes").hexdigest()
    kept = store.store(source, sha, source.name)
    assert store.lookup(sha, source.name) == kept
    assert (store.root.stat().st_mode & 0o777) == 0o700
    kept.chmod(0o644)
    kept.write_bytes(b"the poisoned bytes")
    assert store.lookup(sha, source.name) is None
