"""The platform's 422 ``detail`` texts mapped to the EK code envkit reports for the same defect.

Learned from the differential test against nemo-platform 0.6.0 (every package and job under
``fixtures/``): a user who reads "EK500" in the submit error finds the rule, its why and its
fix with ``envkit rule EK500``. Patterns are matched in order; the first hit wins.
"""

from __future__ import annotations

import re

__all__ = ["PATTERNS", "ek_code_for"]

PATTERNS: tuple[tuple[str, str], ...] = (
    # the environment FileSet (manifest schema and listing checks)
    ("EK100", r"has no nemo-environment\.yaml at its root"),
    ("EK101", r"nemo-environment\.yaml must be a mapping|while parsing|while scanning"),
    ("EK103", r"does not match any of the expected tags"),
    ("EK105", r"config_paths entry must be relative and contained"),
    ("EK111", r"native-v1 config_paths must be under"),
    ("EK112", r"adapter-wheels-v1 config_paths should live under configs/"),
    ("EK106", r"config_paths reference files that are not in the package"),
    ("EK104", r"config_paths\.\d+\s+Input should be a valid string"),
    ("EK108", r"metadata\.name\s"),
    ("EK109", r"v1\.adapter\s"),
    ("EK102", r"extra_forbidden"),
    ("EK110", r"is not built into the training image"),
    ("EK200", r"JSONL must not live in the environment package"),
    ("EK201", r"must carry a non-empty wheels/ directory"),
    ("EK202", r"Non-wheel files in wheels/"),
    # the dataset FileSet
    ("EK500", r"must contain training\.jsonl"),
    # the job
    ("EK600", r"discriminator 'type'|union_tag_not_found"),
    ("EK601", r"lora must be omitted"),
    ("EK602", r"use_triton"),
    ("EK604", r"temperature`?: Input should be greater than 0"),
    ("EK605", r"must be a multiple of batch_size"),
    ("EK606", r"router_aux_loss_coef is set both"),
    ("EK607", r"require policy_backend"),
    ("EK608", r"`spec\.(?:environment|dataset|model)`: Input should be a valid string"),
    ("EK610", r"Extra inputs are not permitted"),
    ("EK609", r"`spec\.training[^`]*`: Input should be"),
)
_COMPILED = tuple((code, re.compile(pattern)) for code, pattern in PATTERNS)


def ek_code_for(detail: str) -> str | None:
    """The EK code for a platform rejection, or None when envkit has no rule for it."""
    for code, pattern in _COMPILED:
        if pattern.search(detail):
            return code
    return None
