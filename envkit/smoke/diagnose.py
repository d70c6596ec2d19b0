"""Map what a smoke run saw (a server log, a rollout failure) to an EK code and one reason.

Spin-up failures the static rules cannot see get codes of their own (EK7xx); failures that
are really a static rule's (a module the venv lacks: EK403) keep that rule's code. The runtime's
own log table is consulted last, so a smoke-specific reading wins where both match.
"""

from __future__ import annotations

import re

from envkit.smoke._runtime import diagnose_log
from envkit.validators.spinup import RULES as SPINUP_RULES

__all__ = ["SMOKE_CODES", "diagnose", "diagnose_rollout", "diagnose_specific"]

SMOKE_CODES = {rule.code: rule.title for rule in SPINUP_RULES}
"""Runtime-only codes (rules in ``validators/spinup.py``): what ``envkit smoke`` alone finds."""

# Modules CPython 3.13 removed (PEP 594 and lib2to3): a wheel importing one installs fine
# (pure, py3-none-any) and dies at import on the training image.
_REMOVED_IN_313 = ("aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "lib2to3",
                   "mailcap", "msilib", "nis", "nntplib", "ossaudiodev", "pipes", "sndhdr",
                   "spwd", "sunau", "telnetlib", "uu", "xdrlib")
_REMOVED = re.compile(r"No module named '({})(?:\.[\w.]+)?'".format("|".join(_REMOVED_IN_313)))
_NETWORK = re.compile(
    r"Network is unreachable|Temporary failure in name resolution|Name or service not known|"
    r"No address associated with hostname|ProxyError|Tunnel connection failed|"
    r"envkit smoke --offline: network access refused|403 Forbidden \(envkit smoke")
# pydantic's message, as Gym prints it: each line prefixed "(server)  | ", or JSON-escaped
# inside the agent's log of the 500 it got back.
_BAD_REWARD = re.compile(
    r"reward(?:[ \t]*\n[^\n]*?|(?:\\)+n\s*)Input should be a valid (?:number|float)")
_IMPORT = re.compile(r"ModuleNotFoundError|ImportError")
_NOT_READY = re.compile(r"servers not ready after|Timed out after .* waiting for Gym servers")


def diagnose_specific(text: str, offline: bool) -> tuple[str | None, str]:
    """What only a smoke run reads from a log; ``(None, "")`` when nothing matches."""
    if match := _REMOVED.search(text):
        return "EK406", (f"a wheel imports `{match.group(1)}`, which CPython 3.13 removed from "
                         "the standard library: it installs but cannot run on the training "
                         "image (upgrade it, or replace it)")
    if offline and _NETWORK.search(text):
        return "EK703", ("a server reached for the network at spin-up under --offline "
                         "(vendor the data into the package or fetch it lazily)")
    if _BAD_REWARD.search(text):
        return "EK702", "the resources server's verify() built a response whose reward is no number"
    return None, ""


def diagnose(text: str, *, offline: bool) -> tuple[str | None, str]:
    """The likely EK code and a one-line reason for a failed spin-up's log text."""
    code, reason = diagnose_specific(text, offline)
    if code is not None:
        return code, reason
    if _NOT_READY.search(text):
        return "EK701", SMOKE_CODES["EK701"]
    return diagnose_log(text)


def diagnose_rollout(failure: str, logs: str, *, offline: bool) -> tuple[str, str]:
    """A failed rollout: its ``failure_reason`` plus the servers' logs -> code, reason.

    Only readings specific to a rollout count here: the runtime's start-up table would match
    install-time noise that every log carries (uv's Requires-Python notes).
    """
    if "no numeric `reward`" in failure:
        return "EK702", f"{SMOKE_CODES['EK702']}: {failure.split(': ', 1)[-1]}"
    code, reason = diagnose_specific(f"{failure}\n{logs}", offline)
    if code is not None:
        return code, reason
    if _IMPORT.search(logs):
        return "EK403", "a server imports a module its venv does not have (at its first request)"
    return "EK704", f"{SMOKE_CODES['EK704']}: {failure[:300]}"
