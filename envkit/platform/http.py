"""The HTTP layer: auth header, TLS, timeouts, retries with backoff, one-line errors.

Retries follow the platform's own upload client (408/429/5xx and dropped connections,
``Retry-After`` honoured), with a few more attempts: an upload is worth waiting for.
"""

from __future__ import annotations

import contextlib
import time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

import httpx

from envkit.platform.errors import PlatformError, ek_code_for, format_detail

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from envkit.platform.connection import Connection

__all__ = ["RETRY_STATUSES", "PlatformClient", "retry_delay"]

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_ATTEMPTS = 5
_MAX_DELAY = 30.0


def retry_delay(attempt: int, retry_after: str | None) -> float:
    """``Retry-After`` (seconds or an HTTP date) when given, else 0.5 s doubling, capped."""
    seconds = None
    if retry_after:
        try:
            seconds = float(retry_after)
        except ValueError:
            with contextlib.suppress(TypeError, ValueError):
                seconds = parsedate_to_datetime(retry_after).timestamp() - time.time()
    if seconds is not None:
        return min(_MAX_DELAY, max(0.0, seconds))
    return float(min(_MAX_DELAY, 0.5 * 2**attempt))


class PlatformClient:
    """One ``httpx.Client`` per command; safe to share across upload threads."""

    def __init__(self, connection: Connection, *, timeout: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        headers = {"User-Agent": "envkit"}
        if connection.token:
            headers["Authorization"] = f"Bearer {connection.token}"
        self.connection = connection
        self._sleep = sleep
        try:
            self._http = httpx.Client(
                base_url=connection.base_url, headers=headers, verify=connection.verify,
                timeout=httpx.Timeout(timeout, connect=10.0),
                limits=httpx.Limits(max_connections=16, max_keepalive_connections=8),
            )
        except (OSError, ValueError) as exc:  # a missing or unreadable CA bundle, a bad URL
            msg = f"cannot set up the connection to {connection.base_url}: {exc}"
            raise PlatformError(msg) from None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PlatformClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, *, ok: Iterable[int] = (200, 201),
                body: Callable[[], Any] | None = None, **kwargs: Any) -> httpx.Response:
        """Send with retries; return the response when its status is in ``ok``. ``body`` builds
        fresh ``content`` per attempt (a file stream cannot be replayed).

        :raises PlatformError: no reply after the retries, or a status outside ``ok``.
        """
        ok = frozenset(ok)
        for attempt in range(_ATTEMPTS):
            if body is not None:
                kwargs["content"] = body()
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                # A refused connection is answered fast and rarely heals in seconds: 3 tries.
                last = 2 if isinstance(exc, httpx.ConnectError) else _ATTEMPTS - 1
                if attempt >= last or isinstance(exc, httpx.UnsupportedProtocol):
                    raise self._unreachable(exc) from None
                self._sleep(retry_delay(attempt, None))
                continue
            if response.status_code in ok:
                return response
            if response.status_code in RETRY_STATUSES and attempt < _ATTEMPTS - 1:
                self._sleep(retry_delay(attempt, response.headers.get("retry-after")))
                continue
            raise self.error(response, method, path)
        raise AssertionError("unreachable")  # pragma: no cover

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs).json()

    def _unreachable(self, exc: Exception) -> PlatformError:
        url = self.connection.base_url
        why = type(exc).__name__ if not str(exc) else str(exc).splitlines()[0]
        msg = (f"cannot reach NeMo Platform at {url} ({why}); check --base-url / NMP_BASE_URL "
               "and that the platform is running")
        return PlatformError(msg)

    @staticmethod
    def error(response: httpx.Response, method: str, path: str) -> PlatformError:
        """A reply the caller did not expect, as one line that names what to do."""
        status = response.status_code
        try:
            detail = format_detail(response.json())
        except ValueError:
            detail = response.text.strip().splitlines()[0] if response.text.strip() else ""
        if status in (401, 403):
            msg = (f"the platform refused the credentials (HTTP {status}) for {method} {path}: "
                   "set NMP_ACCESS_TOKEN or run `nemo auth login`")
            if detail:
                msg += f" ({detail})"
        else:
            msg = f"HTTP {status} from {method} {path}" + (f": {detail}" if detail else "")
        code = ek_code_for(detail) if status == 422 and detail else None
        if code:
            msg += f" [{code}: `envkit rule {code}` explains the fix]"
        return PlatformError(msg, status=status, detail=detail, code=code)
