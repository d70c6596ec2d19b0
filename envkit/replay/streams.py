"""What a recorded run writes and which variables it reads: its streams teed (the bytes reach
the terminal as before and are kept, in order, with the stream they went to) and
``os.environ`` noting each name it is asked for."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, TextIO

__all__ = ["RecordingEnviron", "Tee"]


class Tee:
    """A text stream that also keeps what is written to it, as bytes, in call order."""

    def __init__(self, stream: TextIO, fd: int, chunks: list[tuple[int, bytes]]) -> None:
        self._stream, self._fd, self._chunks = stream, fd, chunks

    def write(self, text: str) -> int:
        written = self._stream.write(text)  # first: a bytes argument raises here, as it would
        self._chunks.append((self._fd, text.encode(self._stream.encoding or "utf-8",
                                                   self._stream.errors or "strict")))
        return written

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":  # bytes written under the text layer are kept too
            return BufferTee(self._stream.buffer, self._fd, self._chunks)
        return getattr(self._stream, name)


class BufferTee:
    def __init__(self, raw: Any, fd: int, chunks: list[tuple[int, bytes]]) -> None:
        self._raw, self._fd, self._chunks = raw, fd, chunks

    def write(self, data: bytes) -> int:
        written: int = self._raw.write(data)
        self._chunks.append((self._fd, bytes(data)))
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class RecordingEnviron(os._Environ):  # type: ignore[type-arg]
    """``os.environ`` that notes each name asked for into ``_seen`` (set for the run)."""

    _seen: dict[str, str | None] | None = None

    def __getitem__(self, key: str) -> str:
        try:
            value: str = super().__getitem__(key)
        except KeyError:
            self._note(key, None)
            raise
        self._note(key, value)
        return value

    def __iter__(self) -> Iterator[str]:
        for key in super().__iter__():
            self._note(key, super().__getitem__(key))
            yield key

    def _note(self, key: str, value: str | None) -> None:
        if RecordingEnviron._seen is not None and isinstance(key, str):
            RecordingEnviron._seen.setdefault(key, value)
