"""Secrets in a tree of files: dotenv files, private keys, files named like keys, and the
shapes of well-known API tokens, each with its file and line and the value masked.

Why here, read with the package: a package is uploaded and runs on a cluster others reach;
the gate must say so before it leaves (EK210), and ``envkit build`` must not copy such files.
A token shape is its vendor's prefix, length and alphabet, and the value must look random, so
ordinary code (``sk-learn``) does not match. Binary files, ``wheels/`` and files over
``MAX_BYTES`` are not scanned.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

from envkit.model._reads import read_fd_bounded

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

__all__ = ["MAX_BYTES", "Secret", "find_secrets", "mask", "scan_text", "secret_file_kind",
           "secret_left_out"]

MAX_BYTES = 1024 * 1024
"""Larger files are data (instance lists, tables), not configuration or code: not scanned."""

_DOTENV_KEPT = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})
"""Dotenv files that by convention hold placeholders, not values."""

_KEY_NAMES = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk",
                        "id_ed25519_sk"})


class Secret(NamedTuple):
    """One secret found: where, what kind, and the value masked (never the whole value)."""

    path: str
    line: int
    kind: str
    shown: str


@dataclass(frozen=True)
class _Shape:
    kind: str
    pattern: str
    """Starts with the vendor's literal prefix, which the regex engine searches for first."""
    mixed: bool = True
    """The value must hold a digit and letters of both cases (a random token does)."""
    word: bool = True
    """The token must start a word (no letter, digit, ``_`` or ``-`` just before it)."""

    @cached_property
    def regex(self) -> re.Pattern[bytes]:
        return re.compile(self.pattern.encode())


_SHAPES = (
    _Shape("OpenAI API key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
    _Shape("GitHub token", r"ghp_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    _Shape("GitHub fine-grained token",
           r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}(?![A-Za-z0-9])"),
    _Shape("AWS access key id", r"AKIA[A-Z0-9]{16}(?![A-Za-z0-9])", mixed=False),
    _Shape("Hugging Face token", r"hf_[A-Za-z0-9]{34,40}(?![A-Za-z0-9])"),
    _Shape("Slack token", r"xox[baprs]-[0-9]{8,}-[0-9A-Za-z-]{16,}", mixed=False),
    _Shape("Google API key", r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
    _Shape("NVIDIA API key", r"nvapi-[A-Za-z0-9_-]{40,}"),
    _Shape("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----",
           mixed=False, word=False),
)

_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")

_SKIPPED = (".whl", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".png", ".jpg", ".jpeg",
            ".gif", ".webp", ".ico", ".pdf", ".parquet", ".arrow", ".npy", ".npz", ".pt",
            ".pth.tar", ".bin", ".safetensors", ".so", ".pyc", ".sqlite", ".db", ".mp3",
            ".mp4", ".wav")
"""Binary formats by name: not read at all."""

def _random(value: bytes) -> bool:
    """Digits and letters of both cases: what a random token holds and a name rarely does."""
    return (any(48 <= b <= 57 for b in value) and any(65 <= b <= 90 for b in value)
            and any(97 <= b <= 122 for b in value))


def mask(value: str) -> str:
    """The value's first characters (its vendor prefix and at most four more), then how
    many are hidden: enough to recognise which key it is, never enough to use it."""
    cut = value.rfind("-", 0, 12) if value.startswith(("sk-", "nvapi-", "xox")) else -1
    cut = max(cut, value.find("_", 0, 12))
    keep = min(len(value) // 3, (cut + 1 if cut >= 0 else 4) + 4)
    return f"{value[:keep]}…({len(value) - keep} more characters)"


def scan_text(path: str, data: bytes) -> Iterator[Secret]:
    """The token shapes and private-key blocks in ``data`` (a file's bytes)."""
    for shape in _SHAPES:
        for match in shape.regex.finditer(data):
            start = match.start()
            if shape.word and start and data[start - 1] in _WORD:
                continue
            value = match.group()
            if shape.mixed and not _random(value[4:]):
                continue
            line = data.count(b"\n", 0, match.start()) + 1
            shown = (value.decode() if shape.kind == "private key"
                     else mask(value.decode("ascii", "replace")))
            yield Secret(path, line, shape.kind, shown)


def secret_file_kind(rel: str) -> str | None:
    """What a file is by its name alone: a dotenv file or a private key's usual name."""
    name = rel.rsplit("/", 1)[-1]
    if (name == ".env" or name.startswith(".env.")) and name not in _DOTENV_KEPT:
        return "dotenv file"
    if name in _KEY_NAMES:
        return "private key file"
    return None


def _credentials(path: str, data: bytes) -> Secret | None:
    """A ``*credentials.json`` with a ``private_key`` or secret field (a service account's)."""
    if not path.endswith("credentials.json"):
        return None
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    fields = sorted(k for k in doc if isinstance(k, str)
                    and ("private_key" in k.lower() or "secret" in k.lower()))
    if not fields:
        return None
    return Secret(path, 1, "credentials file", f"fields {', '.join(fields)}")


def _holds_secret(rel: str, data: bytes) -> bool:
    """A private key, or a credentials file's secret fields."""
    return _credentials(rel, data) is not None or (b"PRIVATE KEY-----" in data and any(
        s.kind == "private key" for s in scan_text(rel, data)))


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        data = read_fd_bounded(fd, MAX_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if len(data) > MAX_BYTES or b"\0" in data[:8192] else data  # grown since fstat


def find_secrets(root: Path, files: Iterable[str],
                 digests: dict[str, str] | None = None) -> tuple[Secret, ...]:
    """Every secret in the regular files ``files`` (relative paths) under ``root``, in path
    order; ``wheels/`` is not scanned (its archives are checked as wheels). ``digests``, when
    given, receives the SHA-256 of each file read whole, for the package digest to reuse."""
    found: list[Secret] = []
    base = os.fspath(root)
    if digests is not None:  # a package with a provenance record: hashlib is loaded for it
        from hashlib import sha256
    for rel in sorted(files):
        if rel.startswith("wheels/"):
            continue
        kind = secret_file_kind(rel)
        if kind is not None:
            found.append(Secret(rel, 1, kind, "its contents are not shown"))
        if rel.lower().endswith(_SKIPPED):
            continue
        data = _read(f"{base}/{rel}")
        if data is None:
            continue
        if digests is not None:
            digests[rel] = sha256(data).hexdigest()
        if (creds := _credentials(rel, data)) is not None:
            found.append(creds)
        if kind is None:
            found.extend(scan_text(rel, data))
    return tuple(found)


def secret_left_out(path: Path, rel: str, include: Iterable[str], notes: list[str]) -> bool:
    """Whether a build leaves the file ``path`` (``rel`` in the package) out as a secret; when
    it does, a line saying so is added to ``notes``. A glob of ``include`` (``fnmatch``: ``*``
    also matches ``/``) that matches ``rel`` lets it in."""
    kind = secret_file_kind(rel)
    if kind is None:
        data = None if rel.lower().endswith(_SKIPPED) else _read(os.fspath(path))
        if data is None or not _holds_secret(rel, data):
            return False
        kind = "private key or credentials"
    from fnmatch import fnmatchcase

    if any(fnmatchcase(rel, pattern) for pattern in include):
        notes.append(f"included {rel} ({kind}) as --include asks: it will be uploaded")
        return False
    notes.append(f"left out {rel} ({kind}): secrets never travel in a package "
                 "(--include GLOB ships a file on purpose)")
    return True
