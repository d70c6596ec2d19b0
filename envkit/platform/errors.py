"""One exception for everything that goes wrong between envkit and the platform, and how a
rejection's ``detail`` reads: one line, and the EK code envkit reports for the same defect."""

from __future__ import annotations

from typing import Any

from envkit.errors import FailedError, InvalidError
from envkit.validators.runtime_signatures import Where, first_match

__all__ = ["PlatformError", "SubmitRejected", "UploadInterrupted", "ek_code_for",
           "format_detail"]


class PlatformError(FailedError):
    """A one-line, user-facing failure: unreachable URL, refused credentials, a 4xx/5xx reply.
    ``status`` is ``None`` when no reply came; ``detail`` is the platform's own text."""

    def __init__(self, message: str, *, status: int | None = None, detail: str | None = None,
                 code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.status = status
        self.detail = detail


def format_detail(body: Any) -> str:
    """FastAPI's ``detail``: a string, or a list of ``{loc, msg}`` errors -> one line."""
    detail = body.get("detail", body) if isinstance(body, dict) else body
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if isinstance(item, dict):
                loc = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
                parts.append(f"`{loc}`: {item.get('msg', '')}" if loc else str(item.get("msg")))
            else:
                parts.append(str(item))
        return "; ".join(parts)
    if isinstance(detail, dict):
        return "; ".join(f"{k}: {v}" for k, v in detail.items())
    return str(detail)


def ek_code_for(detail: str) -> str | None:
    """The EK code for a platform rejection (a 422 ``detail``), or None: the ``Where.SUBMIT``
    rows of the one signature table, so ``envkit rule CODE`` explains the fix."""
    signature = first_match(detail, Where.SUBMIT)
    return signature.code if signature is not None else None


class UploadInterrupted(PlatformError):
    """Ctrl-C mid-upload: nothing was marked complete, so the same command resumes (exit 1)."""


class SubmitRejected(InvalidError):
    """envkit's own validation failed: nothing was uploaded (exit 1, the diagnostics shown)."""

    def __init__(self, diagnostics: list[Any]) -> None:
        super().__init__(f"{len(diagnostics)} validation problem(s); nothing was uploaded",
                         hint="fix them (`envkit rule CODE` explains each), then submit again",
                         diagnostics=diagnostics)
