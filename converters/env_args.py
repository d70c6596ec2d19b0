"""``--env-args``: what reaches ``load_environment`` now, and what is written into the package.

The package's ``configs/verifiers_agent.yaml`` is uploaded as a FileSet, so a secret typed as a
literal would travel with it. Values may instead be OmegaConf references, ``${oc.env:VAR}`` or
``${oc.env:VAR,default}``: the package keeps the reference (Gym resolves it when the agent
server spins up), and the conversion's own load gets the value from this process's
environment. A literal string under a key that looks like a secret is refused unless the
user says otherwise, and logs only ever show references or ``***``.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, cast

from envkit.errors import FailedError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["EnvArgsError", "literal_secrets", "redacted", "resolved", "secret_key"]

_REF = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^}]*))?\}")
_SECRET = re.compile(r"key|token|secret|password", re.IGNORECASE)


class EnvArgsError(FailedError, ValueError):
    """An env arg cannot be used as given; ``hint`` says how to fix it."""


def secret_key(key: object) -> bool:
    """``api_key``, ``HF_TOKEN``, ``client_secret``, ``db_password``... (case-insensitive)."""
    return isinstance(key, str) and bool(_SECRET.search(key))


def _literal(value: Any) -> bool:
    """A string with more than ``${oc.env:...}`` references in it."""
    return isinstance(value, str) and bool(_REF.sub("", value))


def _map(value: Any, leaf: Callable[[Any, bool, str], Any], secret: bool = False,
         path: str = "") -> Any:
    """``value`` with each leaf replaced by ``leaf(value, secret, path)``, ``secret`` true under
    a secret-looking key."""
    if isinstance(value, dict):
        return {k: _map(v, leaf, secret or secret_key(k), f"{path}.{k}" if path else str(k))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_map(v, leaf, secret, f"{path}[{i}]") for i, v in enumerate(value)]
    return leaf(value, secret, path)


def literal_secrets(args: Mapping[str, Any]) -> list[str]:
    """Paths of secret-looking keys whose value is a literal (not only ``${oc.env:...}``)."""
    found: list[str] = []

    def note(value: Any, secret: bool, path: str) -> None:
        if secret and _literal(value):
            found.append(path)

    _map(dict(args), note)
    return found


def resolved(args: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``args`` with every ``${oc.env:VAR[,default]}`` replaced by its value, for the load.

    :raises EnvArgsError: a referenced variable is unset and has no default.
    """
    env = os.environ if environ is None else environ

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        msg = f"--env-args refers to ${{oc.env:{name}}}, but {name} is not set"
        raise EnvArgsError(msg, hint=f"export {name} for the conversion (the package keeps "
                                     "only the reference; Gym resolves it on the cluster)")

    return cast("dict[str, Any]",
                _map(dict(args), lambda v, *_: _REF.sub(one, v) if isinstance(v, str) else v))


def redacted(args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` for logs: references kept, literal values under secret-looking keys masked."""
    return cast("dict[str, Any]",
                _map(dict(args), lambda v, secret, _: "***" if secret and _literal(v) else v))
