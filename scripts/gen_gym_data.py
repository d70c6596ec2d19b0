"""Regenerate ``envkit/data/gym.json`` from an installed ``nemo-gym`` wheel.

Run it with the interpreter of a venv that has nemo-gym installed (Gym needs CPython 3.13):

    uv venv --python 3.13 /tmp/gym && uv pip install --python /tmp/gym/bin/python \
        --python-version 3.13.14 nemo-gym==0.7.0
    /tmp/gym/bin/python scripts/gen_gym_data.py > envkit/data/gym.json

Nothing here is typed by hand: built-in server names are the directories the wheel installs,
and the closed sets (domains, dataset types, licenses) are read off Gym's pydantic models.
"""

from __future__ import annotations

import json
import sys
import typing
from importlib import metadata
from pathlib import Path

SERVER_TYPES = ("resources_servers", "responses_api_agents", "responses_api_models", "environment_servers")


def _literals(annotation: object) -> list[str]:
    """Flatten Optional[Union[Literal[...], ...]] into its literal strings."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return [a for a in args if isinstance(a, str)]
    return [value for arg in args for value in _literals(arg)]


def main() -> None:
    from nemo_gym import config_types  # noqa: PLC0415 - only importable in the Gym venv

    dist = metadata.distribution("nemo-gym")
    site = Path(dist.locate_file(""))
    builtins = {
        server_type: sorted(
            p.name for p in (site / server_type).iterdir()
            if p.is_dir() and not p.name.startswith(("_", "."))
        )
        for server_type in SERVER_TYPES
    }
    fields = config_types.DatasetConfig.model_fields
    data = {
        "nemo_gym_version": dist.version,
        "requires_python": dist.metadata["Requires-Python"],
        "requires_dist": [r for r in dist.requires or [] if "extra ==" not in r],
        "domains": [d.value for d in config_types.Domain],
        "dataset_types": _literals(fields["type"].annotation),
        "dataset_licenses": _literals(fields["license"].annotation),
        "builtins": builtins,
    }
    json.dump(data, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
