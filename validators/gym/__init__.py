"""EK3xx: the package's Gym configs, checked the way the pinned Gym version reads them at spin-up.

Every fact here was checked against the real parser (``nemo_gym.global_config``,
``nemo_gym.config_types``, ``nemo_gym.cli.env``) and is re-checked by
``tests/validators/gym/test_fidelity.py``, which loads each fixture, edge variants and a sample of
Gym's own server configs with Gym itself. Where a config is wrong in a way Gym aborts on, the rule
is an error; where Gym accepts it but the run silently does something else (a skipped block, an
override, a deferred failure), it is a warning.

The checks read one merged view of the configs (``gym.model``), built once per package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.validators.gym.fields import check_builtin_fields
from envkit.validators.gym.refs import (
    check_environment_relays,
    check_model_pairings,
    check_policy_endpoint,
    check_policy_model,
    check_refs,
)
from envkit.validators.gym.rules import RULES
from envkit.validators.gym.servers import (
    check_config_docs,
    check_domains,
    check_duplicate_instances,
    check_impl_dirs,
    check_server_shapes,
)
from envkit.validators.gym.values import check_datasets, check_includes, check_interpolations

if TYPE_CHECKING:
    from envkit.validators._base import Check

__all__ = ["CHECKS", "RULES"]

CHECKS: tuple[Check, ...] = (
    check_config_docs,  # EK300
    check_server_shapes,  # EK301
    check_domains,  # EK302, EK303
    check_refs,  # EK304
    check_policy_model,  # EK305, EK306
    check_duplicate_instances,  # EK307
    check_impl_dirs,  # EK308, EK309, EK310
    check_datasets,  # EK311, EK315
    check_policy_endpoint,  # EK312
    check_interpolations,  # EK313
    check_environment_relays,  # EK314
    check_includes,  # EK316
    check_model_pairings,  # EK317
    check_builtin_fields,  # EK318
)
