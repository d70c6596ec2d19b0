"""A real PEP 503 "simple" index on 127.0.0.1, serving a folder of wheels (the hub stand-in).

``/simple/`` lists projects, ``/simple/<normalized>/`` links each file with its
``#sha256=`` fragment and ``data-requires-python``, ``/files/<name>`` serves the bytes.
"""

from __future__ import annotations

import hashlib
import html
import threading
import zipfile
from contextlib import contextmanager
from email.parser import BytesParser
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name, parse_wheel_filename

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["serve_index"]


def _requires_python(wheel: Path) -> str | None:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return BytesParser().parsebytes(zf.read(meta)).get("Requires-Python")


class _Handler(BaseHTTPRequestHandler):
    def __init__(self, *args: object, folder: Path, **kwargs: object) -> None:
        self.folder = folder
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def log_message(self, *args: object) -> None:  # keep test output quiet
        return

    def _send(self, body: bytes, ctype: str = "text/html") -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "none")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        wheels = sorted(self.folder.glob("*.whl"))
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        if parts == ["simple"]:
            names = sorted({canonicalize_name(parse_wheel_filename(w.name)[0]) for w in wheels})
            links = "".join(f'<a href="/simple/{n}/">{n}</a>\n' for n in names)
            return self._send(f"<!DOCTYPE html><html><body>\n{links}</body></html>".encode())
        if len(parts) == 2 and parts[0] == "simple":
            return self._project(wheels, canonicalize_name(parts[1]))
        if len(parts) == 2 and parts[0] == "files" and (self.folder / parts[1]).is_file():
            return self._send((self.folder / parts[1]).read_bytes(), "application/octet-stream")
        self.send_error(404)
        return None

    def _project(self, wheels: list[Path], name: str) -> None:
        mine = [w for w in wheels if canonicalize_name(parse_wheel_filename(w.name)[0]) == name]
        if not mine:
            self.send_error(404)
            return
        links = []
        for w in mine:
            sha = hashlib.sha256(w.read_bytes()).hexdigest()
            rp = _requires_python(w)
            attr = f' data-requires-python="{html.escape(rp)}"' if rp else ""
            links.append(f'<a href="/files/{w.name}#sha256={sha}"{attr}>{w.name}</a>\n')
        self._send(f"<!DOCTYPE html><html><body>\n{''.join(links)}</body></html>".encode())


@contextmanager
def serve_index(folder: Path) -> Iterator[str]:
    """Serve ``folder``'s wheels; yields the index URL (``http://127.0.0.1:<port>/simple/``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, folder=folder))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()
