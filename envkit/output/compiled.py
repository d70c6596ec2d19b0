"""``envkit train --print-config`` for people: the compiled NeMo-RL config as YAML.

Why YAML: NeMo-RL's own configs are YAML files (Hydra/OmegaConf), so the human form is the one
a reader already compares against a recipe; the keys that cannot apply on this machine follow
as comments, so the text still loads as a config. ``--output-format json`` prints the report
object itself (``version``, ``train_rows``, ``validation_rows``, ``config``,
``cannot_apply_here``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["compiled_config_text"]


def compiled_config_text(report: Mapping[str, Any]) -> str:
    """The report as commented YAML: a header, the config, then what cannot apply here.

    >>> text = compiled_config_text({"train_rows": 2, "validation_rows": 0,
    ...     "config": {"grpo": {"seed": 42}}, "cannot_apply_here": [{"key": "env", "here": "x"}]})
    >>> print(text)
    # NeMo-RL config this job compiles to (sized by 2 training rows, 0 validation rows)
    grpo:
      seed: 42
    <BLANKLINE>
    # Cannot apply on this machine (what envkit train does instead):
    #   env: x
    """
    head = (
        f"# NeMo-RL config this job compiles to (sized by {report['train_rows']} training "
        f"rows, {report['validation_rows']} validation rows)"
    )
    body = yaml.safe_dump(dict(report["config"]), sort_keys=False, default_flow_style=False)
    notes = [f"#   {note['key']}: {note['here']}" for note in report["cannot_apply_here"]]
    tail = ["# Cannot apply on this machine (what envkit train does instead):", *notes]
    return "\n".join([head, body.rstrip("\n"), "", *tail])
