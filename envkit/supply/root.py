"""Where envkit keeps what it caches (``$ENVKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/envkit``,
else ``~/.cache/envkit``), how a file there is written, and when what is found there is
believed.

Why the rules below: a store's entry decides what validate reports without reading the
package again (a file's hash, a wheel's facts), so the store must be as trustworthy as the
gate. An entry is believed only when

- it and every directory from its store's parent down to it belong to the user who runs
  envkit and are not writable by group or others (another user's entry, or one in a directory
  someone else may write, is ignored with one warning line on stderr per process);
- it carries the seal this user's key gives its name and bytes (an HMAC-SHA256 under a key
  kept outside every cache directory, in ``$XDG_STATE_HOME/envkit`` or
  ``~/.local/state/envkit``, 0600): an entry edited, copied in from elsewhere (a restored CI
  cache, files committed to a repository) or moved to another name is a miss, never a verdict.

Entries are plain bytes (JSON, by the stores' choice); nothing read here is ever unpickled,
unmarshalled or executed. Directories are made 0700 and files 0600. Only ``os``, ``time`` and
``contextlib`` are imported at start: validate's start-up imports no more than it needs (the
HMAC's modules load at the first entry).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

__all__ = ["cache_dir", "env_true", "key_file", "read_entry", "stores_off", "trusted_dir",
           "write_entry", "write_whole"]

_UNSAFE_BITS = 0o022
"""Group- or other-writable: someone else may replace what is there."""

_SEAL_LEN = 64
"""Hex digits of the HMAC-SHA256 that starts each entry, before a newline."""

_trusted_dirs: dict[str, bool] = {}
_warned: list[str] = []
_key: list[bytes] = []


def cache_dir() -> str:
    if env := os.environ.get("ENVKIT_CACHE_DIR"):
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "envkit")


def key_file() -> str:
    """Where this user's sealing key lives: never under a cache directory, so whoever fills a
    cache directory (a restored CI cache, a shared folder) does not hold the key."""
    base = (os.environ.get("XDG_STATE_HOME")
            or os.path.join(os.path.expanduser("~"), ".local", "state"))
    return os.path.join(base, "envkit", "cache-key")


def _owned(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & _UNSAFE_BITS


def _warn(path: str) -> None:
    """One line per process: the first untrusted path; the rest of the run stays quiet."""
    if _warned:
        return
    _warned.append(path)
    sys.stderr.write(f"envkit: warning: ignoring cache entries at {path}: not owned by you or "
                     "writable by others (they are read again from the package)\n")


def trusted_dir(path: str) -> bool:
    """``path`` is a real directory (not a link) of this user's that no one else may write."""
    known = _trusted_dirs.get(path)
    if known is not None:
        return known
    try:
        st = os.lstat(path)
    except OSError:
        return False  # not there: nothing to trust, nothing warned
    import stat

    ok = stat.S_ISDIR(st.st_mode) and _owned(st)
    _trusted_dirs[path] = ok
    if not ok:
        _warn(path)
    return ok


def _chain(store: str, rel: str) -> list[str]:
    """The directories an entry ``rel`` of ``store`` depends on: the store's parent (the cache
    root), the store, and each folder below it to the entry's."""
    parts = rel.split("/")[:-1]
    return [os.path.dirname(store) or ".", store,
            *(os.path.join(store, *parts[: i + 1]) for i in range(len(parts)))]


def _private_dirs(store: str, rel: str) -> bool:
    """Make the entry's folders 0700 where missing; then whether all of them are trusted."""
    for folder in _chain(store, rel):
        if not os.path.isdir(folder):
            _trusted_dirs.pop(folder, None)
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, 0o700)
    return all(trusted_dir(folder) for folder in _chain(store, rel))


def _sealing_key(create: bool) -> bytes | None:
    """This user's key (32 random bytes), made on the first write; None when it is missing (a
    read: nothing stored is believed) or is not this user's own 0600 file."""
    if _key:
        return _key[0]
    path = key_file()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return _new_key(path) if create else None
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        data = os.read(fd, 64)
    finally:
        os.close(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077 or len(data) != 32:
        _warn(path)
        return None
    _key.append(data)
    return data


def _new_key(path: str) -> bytes | None:
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        data = os.urandom(32)
        fd = os.open(path, _NEW_FILE, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:  # another process made it first: read that one
        return _sealing_key(create=False)
    _key.append(data)
    return data


def _seal(key: bytes, rel: str, payload: bytes) -> bytes:
    import hashlib
    import hmac

    return hmac.new(key, rel.encode() + b"\0" + payload, hashlib.sha256).hexdigest().encode()


def env_true(name: str) -> bool:
    """Whether the variable ``name`` is set to a true value, read as click reads a flag's
    variable (1, true, t, yes, y, on; any case): the entry points without the flag read it the
    way the commands with it do."""
    return os.environ.get(name, "").strip().lower() in _TRUE


def stores_off() -> bool:
    """Whether ``ENVKIT_NO_CACHE`` is true (:func:`env_true`, as ``validate --no-cache`` reads
    it): then no entry of any store is read or written, whichever command runs (smoke's,
    probe's and submit's gates, build's resolutions)."""
    return env_true("ENVKIT_NO_CACHE")


_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})


def read_entry(store: str, rel: str) -> bytes | None:
    """The payload of entry ``rel`` (a ``/``-separated name) of ``store``; None when it is
    missing, is not this user's own private file in trusted folders, or its seal does not
    match (an edited, planted or moved entry), and always under ``ENVKIT_NO_CACHE``."""
    if stores_off():
        return None
    path = os.path.join(store, *rel.split("/"))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not _owned(st):
            _warn(path)
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not all(trusted_dir(folder) for folder in _chain(store, rel)):
        return None
    key = _sealing_key(create=False)
    data = b"".join(chunks)
    if key is None or len(data) <= _SEAL_LEN or data[_SEAL_LEN:_SEAL_LEN + 1] != b"\n":
        return None
    payload = data[_SEAL_LEN + 1:]
    import hmac

    if not hmac.compare_digest(data[:_SEAL_LEN], _seal(key, rel, payload)):
        return None
    return payload


def write_entry(store: str, rel: str, payload: bytes) -> None:
    """Store ``payload`` as entry ``rel`` of ``store``, sealed, 0600, in 0700 folders; nothing
    is written into a folder this user does not own alone (a cache costs only the speed), and
    nothing at all under ``ENVKIT_NO_CACHE``."""
    if stores_off():
        return
    try:
        if not _private_dirs(store, rel):
            return
    except OSError:
        return
    key = _sealing_key(create=True)
    if key is None:
        return
    write_whole(os.path.join(store, *rel.split("/")),
                _seal(key, rel, payload) + b"\n" + payload)


def write_whole(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: a reader never sees half a file, and
    two writers of one entry each rename a complete file of their own over it. A cache that
    cannot be written costs nothing but the speed, so an ``OSError`` leaves no temp file
    behind and is not raised. The directory is made (0700) only when it is missing; the file
    is 0600."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        try:
            fd = os.open(tmp, _NEW_FILE, 0o600)
        except FileNotFoundError:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd = os.open(tmp, _NEW_FILE, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
