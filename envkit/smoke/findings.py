"""What a smoke run saw -> ordinary diagnostics, located where the user fixes them.

A code comes from the runtime's reading of a log (``envkit.gym.diagnose``, the one signature
table) or from the spin-up rules themselves (``validators/spinup.py``); this module only picks
the rule object, writes the one-line message, and finds the place: the config file (and line)
that defines the server or agent instance, else the manifest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.gym import Finding, Where, diagnose, tail
from envkit.model.package import MANIFEST
from envkit.smoke.report import SmokeFinding
from envkit.validators import RULES
from envkit.validators.spinup import EK704, EK705

if TYPE_CHECKING:
    from envkit.model.package import Package
    from envkit.validators import Rule

__all__ = ["finding", "locate", "read_log", "rollout_finding", "tail_of"]

_TAIL = 40


def locate(package: Package | None, instance: str | None) -> tuple[str, int | None]:
    """The config that defines ``instance`` (path relative to the package, line of its key),
    in ``config_paths`` order as Gym merges them; else the manifest."""
    if package is not None and instance:
        for path in package.config_paths():
            doc = package.configs.get(path)
            if doc is not None and isinstance(doc.data, dict) and instance in doc.data:
                return path, doc.line_of(instance)
    return MANIFEST, None


def _rule(code: str | None, default: Rule) -> Rule:
    return RULES.get(code, default) if code else default


def finding(package: Package | None, subject: str | None, kind: str, reading: Finding, *,
            log_tail: str = "", default: Rule = EK705) -> SmokeFinding:
    """A finding about ``subject`` (a ``kind`` -- server, agent -- instance; None: the run)."""
    rule = _rule(reading.code, default)
    path, line = locate(package, subject)
    who = f"{kind} `{subject}`: " if subject else ""
    said = f" (`{reading.evidence}`)" if reading.evidence else ""
    message = f"{who}{reading.reason}{said}"
    return SmokeFinding(rule.at(path, message, line=line), subject, log_tail)


def read_log(text: str, *, offline: bool) -> Finding | None:
    """Strong evidence only (a removed module, the network under --offline, a non-numeric
    reward): what a bystander server's log may show; None when it shows nothing of that."""
    found = diagnose(text, Where.SERVER_LOG, offline=offline)
    return found if found.code is not None else None


def rollout_finding(package: Package | None, agent: str, failure: str, logs: str, *,
                    offline: bool) -> SmokeFinding:
    """A failed rollout: its reason plus the servers' logs, read as a rollout (EK704 if
    nothing more specific matched)."""
    found = diagnose(f"{failure}\n{logs}", Where.ROLLOUT, offline=offline)
    detail = failure.splitlines()[0][:300] if failure else ""
    reading = Finding(found.code, f"{found.reason}: {detail}" if detail else found.reason,
                      found.evidence if found.evidence not in failure else "")
    return finding(package, agent, "agent", reading, log_tail=tail(failure, 10), default=EK704)


def tail_of(text: str) -> str:
    return tail(text, _TAIL)
