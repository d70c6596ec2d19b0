"""Parallel, streaming PUTs of the files a FileSet still lacks, then the complete mark.

Each file goes out in chunks with its ``Content-Length``, so a wheelhouse never sits in memory
and a cut-off PUT is never taken for a whole file; files the listing already shows at the
right size are not sent again.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from envkit.platform.errors import PlatformError
from envkit.platform.filesets import file_url, remote_sizes, set_complete

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from envkit.model.tree import Tree, TreeFile
    from envkit.platform.filesets import RemoteFileSet
    from envkit.platform.http import PlatformClient

__all__ = ["Progress", "UploadStats", "complete_fileset"]

_CHUNK = 1 << 20
PARALLEL = 4


class Progress(Protocol):
    def start(self, label: str, files: int, nbytes: int) -> None: ...
    def advance(self, nbytes: int) -> None: ...
    def file_done(self) -> None: ...


class _Aborted(Exception):
    pass


@dataclass(frozen=True, slots=True)
class UploadStats:
    files_sent: int
    bytes_sent: int


def _stream(path: Path, progress: Progress, sent: list[int],
            abort: threading.Event) -> Iterator[bytes]:
    try:
        with path.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                if abort.is_set():
                    raise _Aborted
                sent[0] += len(chunk)
                progress.advance(len(chunk))
                yield chunk
    except OSError as exc:
        msg = (f"cannot read {path} mid-upload: {exc.strerror or exc}; nothing was marked "
               "complete, rerun the same command to finish the upload")
        raise PlatformError(msg) from None


def _put(client: PlatformClient, fileset: RemoteFileSet, tree: Tree, item: TreeFile,
         progress: Progress, abort: threading.Event) -> int:
    sent = [0]

    def body() -> Iterator[bytes]:
        progress.advance(-sent[0])  # a retry starts the file over
        sent[0] = 0
        return _stream(tree.root / item.path, progress, sent, abort)

    client.request("PUT", file_url(fileset, item.path), body=body,
                   headers={"Content-Type": "application/octet-stream",
                            "Content-Length": str(item.size)})
    progress.file_done()
    return item.size


def _run_parallel(client: PlatformClient, fileset: RemoteFileSet, tree: Tree,
                  todo: list[TreeFile], progress: Progress) -> int:
    abort = threading.Event()
    pool = ThreadPoolExecutor(max_workers=PARALLEL, thread_name_prefix="envkit-upload")
    futures: list[Future[int]] = [
        pool.submit(_put, client, fileset, tree, item, progress, abort) for item in todo
    ]
    try:
        pending = set(futures)
        while pending:  # short waits so Ctrl-C reaches this thread promptly
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_EXCEPTION)
            for fut in done:
                if fut.exception() is not None:
                    raise fut.exception()  # type: ignore[misc]
        return sum(f.result() for f in futures)
    except BaseException:
        abort.set()
        for fut in futures:
            fut.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def complete_fileset(client: PlatformClient, fileset: RemoteFileSet, tree: Tree,
                     progress: Progress) -> UploadStats:
    """Send what the FileSet lacks, then mark it complete (never before its last file).

    :raises PlatformError: a PUT failed for good or a local file could not be read.
    """
    # A FileSet this run created is empty by definition: listing it could only find stale
    # bytes some other FileSet of that name left in the storage.
    remote = {} if fileset.created else remote_sizes(client, fileset)
    todo = [f for f in tree.files if remote.get(f.path) != f.size]
    progress.start(fileset.ref, len(todo), sum(f.size for f in todo))
    if not todo and fileset.complete:
        return UploadStats(0, 0)
    if todo and fileset.complete:  # someone removed files: not complete until refilled
        set_complete(client, fileset, tree, complete=False)
    sent = _run_parallel(client, fileset, tree, todo, progress) if todo else 0
    set_complete(client, fileset, tree, complete=True)
    return UploadStats(len(todo), sent)
