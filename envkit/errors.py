"""The one error type: every documented failure of an envkit command is an ``EnvkitError``.

Why one base: the CLI decides a command's exit status and the JSON error's ``kind`` from the
exception itself, not from a table of class names, so a new failure cannot fall through to
"internal error" by being forgotten. A failure class picks its kind by its base:

======================  ==================  ====
base                    ``kind``            exit
======================  ==================  ====
``UsageError``          ``usage``           2
``MissingExtraError``   ``missing-extra``   2
``InvalidError``        ``invalid``         1
``FailedError``         ``failed``          1
======================  ==================  ====

Anything that is not an ``EnvkitError`` (nor one of click's own usage errors) is a bug: exit 2,
kind ``internal``, and a request to report it.

This module is the bottom layer: it imports nothing from envkit, so every layer may raise these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "INTERNAL",
    "KIND_EXITS",
    "EnvkitError",
    "FailedError",
    "InvalidError",
    "MissingExtraError",
    "UsageError",
]

KIND_EXITS: dict[str, int] = {
    "usage": 2,
    "missing-extra": 2,
    "invalid": 1,
    "failed": 1,
    "internal": 2,
}
"""Each kind and the exit status the documentation gives it ("Exit codes everywhere": 1 invalid
or failed, 2 usage or internal error; a missing extra is 2, as a usage error)."""

INTERNAL = "internal"
"""The kind of an exception envkit does not document: a bug."""


class EnvkitError(Exception):
    """A failure envkit documents: a one-line message, and optionally a hint, an EK code, the
    diagnostics that explain it and the log lines that are its evidence.

    Subclasses with their own ``__init__`` may set ``hint``, ``code``, ``diagnostics`` and
    ``log_tail`` as instance attributes after calling ``super().__init__(message)``: the class
    attributes below are the defaults the CLI's error output reads.
    """

    kind: ClassVar[str] = "failed"
    """``usage`` | ``invalid`` | ``failed`` | ``missing-extra``: the JSON error's ``kind``."""
    exit_code: ClassVar[int] = 1
    """The command's exit status when this error ends it (default: its kind's, ``KIND_EXITS``)."""

    hint: str = ""
    """What to do about it (printed as ``= help:``)."""
    code: str | None = None
    """The EK rule envkit has for the same defect, when it has one."""
    diagnostics: Sequence[Any] = ()
    """``envkit.model.diagnostics.Diagnostic`` records that explain the failure."""
    log_tail: str = ""
    """The evidence (the end of a failing server's log), printed after the message."""

    def __init__(self, message: str = "", *, hint: str = "", code: str | None = None,
                 diagnostics: Sequence[Any] = (), log_tail: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint
        if code is not None:
            self.code = code
        if diagnostics:
            self.diagnostics = tuple(diagnostics)
        if log_tail:
            self.log_tail = log_tail

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind not in KIND_EXITS or cls.kind == INTERNAL:  # a typo must not exit 2
            kinds = [k for k in KIND_EXITS if k != INTERNAL]
            msg = f"{cls.__qualname__}.kind is {cls.kind!r}; one of {kinds}"
            raise TypeError(msg)
        if "exit_code" not in cls.__dict__:
            cls.exit_code = KIND_EXITS[cls.kind]

    @property
    def message(self) -> str:
        """The one line the user reads (the exception's text)."""
        return str(self)


class UsageError(EnvkitError):
    """The command cannot run as given: a bad option value, a path that is not an input, a
    request that contradicts itself. Shown with the command's usage line, as click's own."""

    kind = "usage"


class MissingExtraError(EnvkitError):
    """The command needs an optional extra that is not installed; the hint is the install
    line."""

    kind = "missing-extra"


class InvalidError(EnvkitError):
    """The inputs fail validation; ``diagnostics`` lists why (as ``envkit validate`` would)."""

    kind = "invalid"


class FailedError(EnvkitError):
    """The command ran and the work failed: a resolution, a download, a server, a training
    run, a platform reply."""

    kind = "failed"
