"""The one table of texts envkit reads after the fact -> the EK rule that names the defect.

Why here: the rules live in ``validators/``; when a package fails at run time anyway, the
reader names the rule a ``envkit validate`` run reports (or, for what only a running Gym
shows, the spin-up rule of ``validators/spinup.py``), so a grep for a code lands next to its
rule and ``envkit rule CODE`` explains the finding. A signature applies only to the kind of
text its ``where`` names (:class:`Where`): uv's ``Requires-Python`` notes are in every server
log, so that reading is an install finding only.

Within one kind of text the first match wins, so entries go from specific to generic (a
missing module is EK403 only when it is not one CPython 3.13 removed). Pure data and one pure
lookup: no I/O.
"""

from __future__ import annotations

import enum
import re
from typing import NamedTuple

from envkit.validators.config_paths import EK104, EK105, EK106, EK111, EK112
from envkit.validators.dataset.rules import EK500
from envkit.validators.gym.rules import EK302, EK304, EK310, EK313
from envkit.validators.job.rules import (
    EK600,
    EK601,
    EK602,
    EK604,
    EK605,
    EK606,
    EK607,
    EK608,
    EK609,
    EK610,
)
from envkit.validators.layout import EK200, EK201, EK202, EK205
from envkit.validators.manifest import EK100, EK101, EK102, EK103, EK108, EK109, EK110
from envkit.validators.spinup import EK701, EK702, EK703, EK704, EK705
from envkit.validators.wheels.rules import EK401, EK403, EK406

__all__ = ["FALLBACK", "SIGNATURES", "Signature", "Where", "first_match"]


class Where(enum.Enum):
    """The kind of text a signature is read in."""

    INSTALL = "venv install"
    """``gym env prefetch`` / uv output while the server venvs are built."""
    START = "server start-up"
    """The log of a server Gym named as failed (or every log) when ``gym env start`` fails."""
    SERVER_LOG = "server log"
    """A server's log read for strong evidence only (a bystander when another failed)."""
    ROLLOUT = "rollout"
    """A failed rollout's reason, then the servers' logs."""
    SUBMIT = "platform submit"
    """The ``detail`` of the platform's 422 answer to a submit (nemo-platform 0.6.0)."""


class Signature(NamedTuple):
    code: str | None
    """The EK rule, or None for a host problem no package rule covers."""
    pattern: str
    """A regular expression searched in the text."""
    reason: str
    """One line for the user ("" where the rule's title says it)."""
    where: frozenset[Where]
    offline_only: bool = False
    """Read only when the run had no route out (``--offline``)."""


_I, _S, _L, _R, _P = Where.INSTALL, Where.START, Where.SERVER_LOG, Where.ROLLOUT, Where.SUBMIT
_RUN = frozenset({_I, _S})
_SPIN = frozenset({_S, _L, _R})
_SUBMIT = frozenset({_P})

# Modules CPython 3.13 removed (PEP 594 and lib2to3): a wheel importing one installs fine
# (pure, py3-none-any) and dies at import on the training image.
_REMOVED_IN_313 = ("aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "lib2to3",
                   "mailcap", "msilib", "nis", "nntplib", "ossaudiodev", "pipes", "sndhdr",
                   "spwd", "sunau", "telnetlib", "uu", "xdrlib")

_SPIN_UP: tuple[Signature, ...] = (
    Signature(EK702.code, r"no numeric `reward` in the answer",
              "a rollout returned no numeric reward", frozenset({_R})),
    Signature(EK406.code, r"No module named '({})(?:\.[\w.]+)?'".format("|".join(_REMOVED_IN_313)),
              "a wheel imports a module CPython 3.13 removed from the standard library: it "
              "installs but cannot run on the training image (upgrade it, or replace it)", _SPIN),
    Signature(EK703.code, r"Network is unreachable|Temporary failure in name resolution|Name or "
              r"service not known|No address associated with hostname|ProxyError|Tunnel "
              r"connection failed|envkit smoke --offline: network access refused|403 Forbidden "
              r"\(envkit smoke",
              "a server reached for the network at spin-up under --offline (vendor the data "
              "into the package or fetch it lazily)", _SPIN, offline_only=True),
    # pydantic's message, as Gym prints it: each line prefixed "(server)  | ", or JSON-escaped
    # inside the agent's log of the 500 it got back.
    Signature(EK702.code, r"reward(?:[ \t]*\n[^\n]*?|(?:\\)+n\s*)Input should be a valid "
              r"(?:number|float)",
              "the resources server's verify() built a response whose reward is no number", _SPIN),
    Signature(EK701.code, r"Timed out after .* waiting for Gym servers",
              "a server did not become ready within the spin-up timeout", frozenset({_S})),
    Signature(EK403.code, r"ModuleNotFoundError|ImportError",
              "a server imports a module its venv does not have (at its first request)",
              frozenset({_R})),
)
"""What only a running Gym shows, read before the install table."""

_INSTALL_AND_START: tuple[Signature, ...] = (
    # Ray gives its raylet a fixed 30 s to register (``ray/_private/node.py``); the runtime
    # retries once, and a second miss is the host's load, not the package.
    Signature(None, r"The current node timed out during startup",
              "Ray's local cluster did not start within its 30 s (the machine is overloaded): "
              "rerun when it is less busy", frozenset({_S})),
    # The host, not the package: a full disk, or a uv cache whose index names an unpacked
    # archive someone removed by hand (uv trusts its index and never re-unpacks it).
    Signature(None, r"No space left on device",
              "the disk is full: free space (envkit's cache is ~/.cache/envkit or "
              "$ENVKIT_CACHE_DIR; `uv cache prune` trims uv's) and rerun", _RUN),
    Signature(None, r"failed to read directory `[^`\n]*archive-v0/",
              "uv's cache is damaged (its index names an unpacked wheel that was deleted): "
              "`uv cache clean` the package named in the log, then rerun", _RUN),
    Signature(EK302.code, r"AlmostServerError|almost-server",
              "a server block failed Gym's validation (domain, datasets[]): see EK302/EK315", _RUN),
    Signature(EK304.code, r"ServerRefNotFoundError|Available responses_api_models: \(none\)",
              "a ref names an instance no config defines (EK304/EK305)", _RUN),
    Signature(EK205.code, r"Missing pyproject\.toml or requirements\.txt|Found both "
              r"pyproject\.toml and requirements",
              "a server dir needs exactly one of requirements.txt / pyproject.toml", _RUN),
    Signature(EK401.code, r"has no wheels with a matching platform tag",
              "a wheel in wheels/ does not match this platform", _RUN),
    Signature(EK403.code, r"not found in the provided package locations|no version of|was not "
              r"found in the package registry|network connectivity is disabled|Because .* "
              r"(?:was not found|unsatisfiable)",
              "a requirement is not satisfied by wheels/ (or the index)", _RUN),
    # Only a resolver's verdict: under --allow-python-override uv warns in every install that
    # the interpreter is below the project's requires-python, whatever then fails.
    Signature(EK406.code, r"(?:current|requested) Python version \([^)\n]*\) does not satisfy|"
              r"requires a different Python",
              "a requirement excludes this Python (nemo-gym's 3.13.14 floor: "
              "--allow-python-override)", _RUN),
    Signature(EK313.code, r"InterpolationKeyError|ConfigInterpolationError|MissingMandatoryValue|"
              r"is not set after merging",
              "a config interpolation cannot be resolved", _RUN),
    Signature(EK403.code, r"ModuleNotFoundError|ImportError",
              "a server imports a module its venv does not have", _RUN),
    Signature(None, r"command not found", "a tool Gym shells out to is missing from PATH", _RUN),
    Signature(EK310.code, r"can't open file|No such file or directory: .*\.py",
              "a server's entrypoint file is missing", _RUN),
)


def _submit(code: str, pattern: str) -> Signature:
    return Signature(code, pattern, "", _SUBMIT)


# Learned from the differential test against nemo-platform 0.6.0 (every package and job under
# ``fixtures/``): a user who reads the code in the submit error finds the rule with `envkit rule`.
_PLATFORM: tuple[Signature, ...] = (
    # the environment FileSet (manifest schema and listing checks)
    _submit(EK100.code, r"has no nemo-environment\.yaml at its root"),
    _submit(EK101.code, r"nemo-environment\.yaml must be a mapping|while parsing|while scanning"),
    _submit(EK103.code, r"does not match any of the expected tags"),
    _submit(EK105.code, r"config_paths entry must be relative and contained"),
    _submit(EK111.code, r"native-v1 config_paths must be under"),
    _submit(EK112.code, r"adapter-wheels-v1 config_paths should live under configs/"),
    _submit(EK106.code, r"config_paths reference files that are not in the package"),
    _submit(EK104.code, r"config_paths\.\d+\s+Input should be a valid string"),
    _submit(EK108.code, r"metadata\.name\s"),
    _submit(EK109.code, r"v1\.adapter\s"),
    _submit(EK102.code, r"extra_forbidden"),
    _submit(EK110.code, r"is not built into the training image"),
    _submit(EK200.code, r"JSONL must not live in the environment package"),
    _submit(EK201.code, r"must carry a non-empty wheels/ directory"),
    _submit(EK202.code, r"Non-wheel files in wheels/"),
    # the dataset FileSet
    _submit(EK500.code, r"must contain training\.jsonl"),
    # the job
    _submit(EK600.code, r"discriminator 'type'|union_tag_not_found"),
    _submit(EK601.code, r"lora must be omitted"),
    _submit(EK602.code, r"use_triton"),
    _submit(EK604.code, r"temperature`?: Input should be greater than 0"),
    _submit(EK605.code, r"must be a multiple of batch_size"),
    _submit(EK606.code, r"router_aux_loss_coef is set both"),
    _submit(EK607.code, r"require policy_backend"),
    _submit(EK608.code, r"`spec\.(?:environment|dataset|model)`: Input should be a valid string"),
    _submit(EK610.code, r"Extra inputs are not permitted"),
    _submit(EK609.code, r"`spec\.training[^`]*`: Input should be"),
)

SIGNATURES: tuple[Signature, ...] = _SPIN_UP + _INSTALL_AND_START + _PLATFORM
"""Every reading, in match order."""

FALLBACK: dict[Where, Signature] = {
    Where.START: Signature(EK705.code, r"", "", frozenset({_S})),
    Where.ROLLOUT: Signature(EK704.code, r"", "", frozenset({_R})),
}
"""What a text of this kind means when no signature matches: a server that failed to start
(EK705), a rollout that failed (EK704)."""


def first_match(text: str, where: Where, *, offline: bool = False) -> Signature | None:
    """The first signature for ``where`` found in ``text`` (``offline``: the run had no route
    out), else the kind's :data:`FALLBACK`, else None."""
    return next((s for s in SIGNATURES if where in s.where and (offline or not s.offline_only)
                 and re.search(s.pattern, text)), FALLBACK.get(where))
