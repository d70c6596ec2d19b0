"""A wheel's members as validation reads them: ``zipfile``'s directory, each member's data
decompressed in bounded pieces and checked against the size and CRC the directory declares.

Why not ``ZipFile.read``: a hostile member declares a small size and inflates to gigabytes
(bzip2 most of all), and ``zipfile`` decompresses it whole before anything can stop it.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Archive"]

_LOCAL = struct.Struct("<4s2B4HL2L2H")  # local file header (30 bytes)
_ENCRYPTED = 0x1
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


class Archive:
    """``sizes`` (uncompressed, by member name) and ``read``/``chunks`` of one member."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self._zf = zf
        self.sizes = {i.filename: i.file_size for i in zf.infolist() if not i.is_dir()}

    def read(self, name: str) -> bytes:
        """Like ``ZipFile.read``, bounded by the declared size, with every failure a hostile
        archive can cause raised as ``BadZipFile``."""
        return b"".join(self.chunks(name))

    def chunks(self, name: str) -> Iterator[bytes]:
        """The member in bounded pieces: stored, deflate and bzip2 through the capped
        decompression here; anything else through ``zipfile``, 4 KiB of input per read.
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
