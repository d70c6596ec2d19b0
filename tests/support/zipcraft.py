"""Zip archives written byte by byte, so a test can state what ``zipfile`` refuses to write:
sizes that lie, unknown compression methods, the encryption flag, names flagged UTF-8 that
are not, a prefix in front of the archive (which sends envkit to its ``zipfile`` fallback).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

__all__ = ["Member", "build_zip", "deflate_zeros", "raw_deflate"]

_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_EOCD = struct.Struct("<4s4H2LH")
UTF8 = 0x800
ENCRYPTED = 0x1


@dataclass(frozen=True)
class Member:
    name: bytes
    data: bytes
    """The bytes stored (already compressed for method 8)."""
    method: int = 0
    size: int | None = None
    """Declared uncompressed size; default ``len(data)``."""
    crc: int | None = None
    flags: int = 0


def raw_deflate(data: bytes) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    return comp.compress(data) + comp.flush()


def deflate_zeros(total: int, chunk: int = 1 << 24) -> tuple[bytes, int]:
    """Raw deflate of ``total`` zero bytes without holding them, and their CRC-32."""
    comp, crc, out, zeros = zlib.compressobj(9, zlib.DEFLATED, -15), 0, [], bytes(chunk)
    for start in range(0, total, chunk):
        piece = zeros[: min(chunk, total - start)]
        crc = zlib.crc32(piece, crc)
        out.append(comp.compress(piece))
    out.append(comp.flush())
    return b"".join(out), crc


def build_zip(members: list[Member], prefix: bytes = b"") -> bytes:
    """The archive bytes: local headers and data, central directory, end record."""
    body, central = bytearray(prefix), bytearray()
    for m in members:
        size = len(m.data) if m.size is None else m.size
        crc = zlib.crc32(m.data) if m.crc is None else m.crc
        offset = len(body) - len(prefix)  # relative to the archive, as `cat prefix z.zip`
        body += _LOCAL.pack(b"PK\x03\x04", 20, m.flags, m.method, 0, 0, crc, len(m.data), size,
                            len(m.name), 0) + m.name + m.data
        central += _CENTRAL.pack(b"PK\x01\x02", 20, 20, m.flags, m.method, 0, 0, crc,
                                 len(m.data), size, len(m.name), 0, 0, 0, 0, 0, offset) + m.name
    cd_offset = len(body) - len(prefix)
    return bytes(body + central + _EOCD.pack(b"PK\x05\x06", 0, 0, len(members), len(members),
                                             len(central), cd_offset, 0))
