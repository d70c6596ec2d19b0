"""A read-only zip directory for the wheel hot path: names and sizes in one pass, members on
demand.

``zipfile.ZipFile`` builds a ``ZipInfo`` object per entry; for ray's wheel (thousands of
entries) that was the largest single cost of checking a wheelhouse. This reader keeps only
``name -> (method, compressed size, size, crc, header offset)`` and hands anything unusual
(zip64, encryption, a prefixed archive, a method other than stored/deflate) back to
``zipfile`` via ``Unsupported``, so behaviour on odd archives is zipfile's.
"""

from __future__ import annotations

import bz2
import struct
import zipfile
import zlib
from typing import BinaryIO

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
        """Decompress one member and check its CRC, as ``ZipFile.read`` does.

        :raises zipfile.BadZipFile: corrupt header, data or CRC.
        """
        method, csize, size, crc, offset = self._entries[name]
        self._fh.seek(offset)
        header = self._fh.read(_LOCAL.size)
        if len(header) != _LOCAL.size or header[:4] != b"PK\x03\x04":
            msg = f"bad local header for {name!r}"
            raise zipfile.BadZipFile(msg)
        fields = _LOCAL.unpack(header)
        self._fh.seek(fields[10] + fields[11], 1)
        raw = self._fh.read(csize)
        try:
            data = raw if method == zipfile.ZIP_STORED else _inflate(raw, size)
        except zlib.error as exc:
            msg = f"{name!r}: {exc}"
            raise zipfile.BadZipFile(msg) from None
        if len(data) != size or zlib.crc32(data) != crc:
            msg = f"bad CRC-32 or size for {name!r}"
            raise zipfile.BadZipFile(msg)
        return data


def _inflate(raw: bytes, size: int) -> bytes:
    """Raw deflate data, but never more than one byte past the declared ``size``: a member
    declared as 50 bytes that inflates to a gigabyte costs 51 bytes, then fails the size check.
    """
    inflater = zlib.decompressobj(-15)
    return inflater.decompress(raw, size + 1)


class ZipfileArchive:
    """The same two members over ``zipfile.ZipFile``, for archives the fast reader declines."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self._zf = zf
        self.sizes = {i.filename: i.file_size for i in zf.infolist() if not i.is_dir()}

    def read(self, name: str) -> bytes:
        """Like ``ZipFile.read``, bounded by the declared size, with every failure a hostile
        archive can cause (unknown compression method, encryption, bad data) raised as
        ``BadZipFile``. bzip2 is inflated here with an output bound (``zipfile`` has none, and
        81 bytes of bzip2 hold 50 MB of zeros); other methods are read 4 KiB of input at a time
        so ``zipfile``'s own overshoot per read stays small."""
        info = self._zf.getinfo(name)
        try:
            if info.compress_type == zipfile.ZIP_BZIP2 and not info.flag_bits & _ENCRYPTED:
                data = self._bzip2(info)
            else:
                data, extra = self._stepwise(info)
                if extra:
                    data = b""
        except (NotImplementedError, RuntimeError, ValueError, EOFError, OSError, IndexError,
                KeyError, struct.error, zlib.error) as exc:
            msg = f"{name!r}: {type(exc).__name__}: {exc}"
            raise zipfile.BadZipFile(msg) from None
        if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
            msg = f"bad CRC-32 or size for {name!r}"
            raise zipfile.BadZipFile(msg)
        return data

    def _stepwise(self, info: zipfile.ZipInfo) -> tuple[bytes, bytes]:
        chunks, left = [], info.file_size
        with self._zf.open(info) as member:
            while left > 0 and (chunk := member.read(min(left, 4096))):
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks), member.read(1)

    def _bzip2(self, info: zipfile.ZipInfo) -> bytes:
        fh = self._zf.fp
        assert fh is not None  # an open ZipFile
        fh.seek(info.header_offset)
        fields = _LOCAL.unpack(fh.read(_LOCAL.size))
        if fields[0] != b"PK\x03\x04":
            msg = f"bad local header for {info.filename!r}"
            raise zipfile.BadZipFile(msg)
        fh.seek(fields[10] + fields[11], 1)
        return bz2.BZ2Decompressor().decompress(fh.read(info.compress_size), info.file_size + 1)


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
