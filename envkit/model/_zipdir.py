"""A read-only zip directory for the wheel hot path: names and sizes in one pass, members on
demand.

``zipfile.ZipFile`` builds a ``ZipInfo`` object per entry; for ray's wheel (thousands of
entries) that was the largest single cost of checking a wheelhouse. This reader keeps only
``name -> (method, compressed size, size, crc, header offset)`` and hands anything unusual
(zip64, encryption, a prefixed archive, a method other than stored/deflate) back to
``zipfile`` via ``Unsupported``, so behaviour on odd archives is zipfile's.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from typing import IO, TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Archive", "Unsupported", "ZipfileArchive", "open_archive"]

_EOCD = struct.Struct("<4s4H2LH")  # end of central directory record (22 bytes)
_CDIR = struct.Struct("<8xHH4xLLLHHH8xL")
"""Central directory file header (46 bytes), only the fields used: flags, method, crc,
compressed size, size, name/extra/comment lengths, local header offset."""
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # local file header (30 bytes)
_MAX_COMMENT = 0xFFFF
_UTF8_FLAG = 0x800
_ENCRYPTED = 0x1


class Unsupported(Exception):
    """The fast reader declines this archive; use ``zipfile`` instead."""


class Archive:
    """Members of one zip file: ``sizes`` (uncompressed) and ``read(name)``."""

    def __init__(self, fh: BinaryIO, entries: dict[str, tuple[int, int, int, int, int]]) -> None:
        self._fh = fh
        self._entries = entries
        self.sizes = {name: e[2] for name, e in entries.items() if not name.endswith("/")}

    def read(self, name: str) -> bytes:
        """One member, its CRC and size checked, as ``ZipFile.read`` does.

        :raises zipfile.BadZipFile: corrupt header, data or CRC.
        """
        return b"".join(self.chunks(name))

    def chunks(self, name: str) -> Iterator[bytes]:
        """The member in pieces of at most 1 MiB (for hashing big members in bounded memory).

        :raises zipfile.BadZipFile: corrupt header or data, or a size or CRC that disagrees
            with the directory (raised once the pieces run out).
        """
        method, csize, size, crc, offset = self._entries[name]
        _seek_data(self._fh, offset, name)
        return _stream(self._fh, name, method, csize, size, crc)


_CHUNK = 1 << 20


def _seek_data(fh: IO[bytes], offset: int, name: str) -> None:
    """Position ``fh`` at the data of the member whose local header is at ``offset``."""
    fh.seek(offset)
    header = fh.read(_LOCAL.size)
    if len(header) != _LOCAL.size or header[:4] != b"PK\x03\x04":
        msg = f"bad local header for {name!r}"
        raise zipfile.BadZipFile(msg)
    fields = _LOCAL.unpack(header)
    fh.seek(fields[10] + fields[11], 1)


def _stream(
    fh: IO[bytes], name: str, method: int, csize: int, size: int, crc: int
) -> Iterator[bytes]:
    """Decompressed pieces, stopped (``BadZipFile``) as soon as they pass the declared size."""
    produced = running = 0
    try:
        for piece in _inflated(_raw(fh, csize), method):
            produced += len(piece)
            if produced > size:
                break
            running = zlib.crc32(piece, running)
            yield piece
    except (zlib.error, OSError, EOFError, ValueError) as exc:
        msg = f"{name!r}: {type(exc).__name__}: {exc}"
        raise zipfile.BadZipFile(msg) from None
    if produced != size or running != crc:
        msg = f"bad CRC-32 or size for {name!r}"
        raise zipfile.BadZipFile(msg)


def _raw(fh: IO[bytes], csize: int) -> Iterator[bytes]:
    left = csize
    while left > 0 and (raw := fh.read(min(left, _CHUNK))):
        left -= len(raw)
        yield raw


def _inflated(raws: Iterator[bytes], method: int) -> Iterator[bytes]:
    """Stored, deflate or bzip2 data, each call's output capped at ``_CHUNK``."""
    if method == zipfile.ZIP_STORED:
        yield from raws
    elif method == zipfile.ZIP_DEFLATED:
        inflater = zlib.decompressobj(-15)
        for raw in raws:
            while raw:
                yield inflater.decompress(raw, _CHUNK)
                raw = inflater.unconsumed_tail
    else:  # bzip2: 81 bytes can hold 50 MB of zeros, so the cap matters most here
        import bz2  # lazy: wheels do not use bzip2, and every validate run imports this module

        bunzip = bz2.BZ2Decompressor()
        for raw in raws:
            yield bunzip.decompress(raw, _CHUNK)
            while not bunzip.needs_input and not bunzip.eof:
                yield bunzip.decompress(b"", _CHUNK)


class ZipfileArchive:
    """The same two members over ``zipfile.ZipFile``, for archives the fast reader declines."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self._zf = zf
        self.sizes = {i.filename: i.file_size for i in zf.infolist() if not i.is_dir()}

    def read(self, name: str) -> bytes:
        """Like ``ZipFile.read``, bounded by the declared size, with every failure a hostile
        archive can cause (unknown compression method, encryption, bad data) raised as
        ``BadZipFile``."""
        return b"".join(self.chunks(name))

    def chunks(self, name: str) -> Iterator[bytes]:
        """The member in bounded pieces. Stored, deflate and bzip2 go through the same capped
        decompression as the fast reader (``zipfile`` inflates bzip2 without an output bound);
        anything else through ``zipfile``, 4 KiB of input per read so its overshoot is small.
        """
        info = self._zf.getinfo(name)
        fh = self._zf.fp
        plain = not info.flag_bits & _ENCRYPTED and info.compress_type in _STREAMED
        if plain and fh is not None:
            _seek_data(fh, info.header_offset, name)
            return _stream(fh, name, info.compress_type, info.compress_size, info.file_size,
                           info.CRC)
        return self._stepwise(info)

    def _stepwise(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        left = info.file_size
        try:
            with self._zf.open(info) as member:
                while left >= 0 and (piece := member.read(min(left + 1, 4096))):
                    left -= len(piece)
                    yield piece
        except (NotImplementedError, RuntimeError, ValueError, EOFError, OSError, IndexError,
                KeyError, struct.error, zlib.error) as exc:
            msg = f"{info.filename!r}: {type(exc).__name__}: {exc}"
            raise zipfile.BadZipFile(msg) from None
        if left != 0:
            msg = f"bad size for {info.filename!r}"
            raise zipfile.BadZipFile(msg)


_STREAMED = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2)


def open_archive(fh: BinaryIO) -> Archive:
    """Read the central directory of the open file ``fh``.

    :raises Unsupported: anything but a plain, unencrypted stored/deflate zip.
    :raises zipfile.BadZipFile: not a zip file at all.
    """
    size = fh.seek(0, 2)  # from the open file: no second path lookup
    tail_len = min(size, _EOCD.size + _MAX_COMMENT)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + _EOCD.size > len(tail):
        msg = "File is not a zip file"
        raise zipfile.BadZipFile(msg)
    _sig, _disk, _cd_disk, _n_disk, count, cd_size, cd_offset, _clen = _EOCD.unpack_from(tail, at)
    eocd_pos = size - tail_len + at
    if count == 0xFFFF or cd_offset == 0xFFFFFFFF or cd_offset + cd_size != eocd_pos:
        raise Unsupported  # zip64 or data in front of the archive
    fh.seek(cd_offset)
    return Archive(fh, _entries(fh.read(cd_size), count))


def _entries(cd: bytes, count: int) -> dict[str, tuple[int, int, int, int, int]]:
    entries: dict[str, tuple[int, int, int, int, int]] = {}
    pos = 0
    for _ in range(count):
        if not cd.startswith(b"PK\x01\x02", pos):
            msg = f"bad central directory entry at byte {pos}"
            raise zipfile.BadZipFile(msg)
        flags, method, crc, csize, usize, nlen, elen, clen, offset = _CDIR.unpack_from(cd, pos)
        if flags & _ENCRYPTED or method not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise Unsupported
        if 0xFFFFFFFF in (csize, usize, offset):
            raise Unsupported  # zip64 extra field carries the real values
        raw = cd[pos + _CDIR.size : pos + _CDIR.size + nlen]
        ascii_or_utf8 = flags & _UTF8_FLAG or raw.isascii()  # ASCII is the same in cp437
        try:
            name = raw.decode() if ascii_or_utf8 else raw.decode("cp437")
        except UnicodeDecodeError:
            msg = f"member name flagged UTF-8 is not UTF-8: {raw[:60]!r}"
            raise zipfile.BadZipFile(msg) from None
        entries[name] = (method, csize, usize, crc, offset)
        pos += _CDIR.size + nlen + elen + clen
    return entries
