"""``hf_config_overrides`` applied to an HF model config, nested keys kept.

Why warn on unknown keys: on the platform a top-level key the model does not read is absorbed
silently (the "GRPO and Reward Environments" guide: Qwen3.5 reads ``router_aux_loss_coef`` under
``text_config``, so a top-level one leaves the aux loss on). The key is still set, as NeMo-RL
would, but with a warning.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["apply_hf_overrides"]

log = logging.getLogger(__name__)


def apply_hf_overrides(config: Any, overrides: dict[str, Any], prefix: str = "") -> list[str]:
    """Set ``overrides`` on ``config`` in place; returns the dotted keys it did not have.

    A dict value descends into a sub-config (``text_config``) or merges into a dict attribute
    (``rope_parameters``); anything else replaces the attribute.
    """
    unknown: list[str] = []
    for key, value in overrides.items():
        path = f"{prefix}{key}"
        current = getattr(config, key, None) if not isinstance(config, dict) else config.get(key)
        known = key in config if isinstance(config, dict) else hasattr(config, key)
        if not known:
            unknown.append(path)
            log.warning(
                "hf_config_overrides: `%s` is not a field of %s; it is set anyway, but the model "
                "may never read it (check the spelling, or nest it under the sub-config that "
                "reads it, e.g. `text_config`)",
                path,
                type(config).__name__,
            )
        if isinstance(value, dict) and (isinstance(current, dict) or hasattr(current, "to_dict")):
            unknown += apply_hf_overrides(current, value, f"{path}.")
        elif isinstance(config, dict):
            config[key] = value
        else:
            setattr(config, key, value)
    return unknown
