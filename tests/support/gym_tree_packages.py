"""Packages made from the real Gym tree: each built-in resources-server config, packaged.

Used by the fidelity test (a sample) and by ``benchmarks/gym_tree_sweep.py`` (all of them): the
server directory is copied without its rows (``.jsonl``, ``data/``) and tests, a
``configs/policy_model.yaml`` goes first, and the config is listed as Gym's own tree has it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

__all__ = ["build_tree_packages", "site_packages"]

from envkit.converters.adapter_pkg import policy_model_config

_POLICY = yaml.safe_dump(policy_model_config(), sort_keys=False)
_SKIP = shutil.ignore_patterns("*.jsonl", "data", "tests", "__pycache__", "*.parquet", "*.png")


def site_packages(venv_root: Path) -> Path:
    """The Gym venv's site-packages (Gym's install root for a wheel install)."""
    return next(venv_root.glob("lib/python3.*/site-packages"))


def build_tree_packages(site: Path, dest: Path, step: int = 1) -> dict[str, Path]:
    """One package per ``resources_servers/*/configs/*.yaml`` (every ``step``-th, sorted)."""
    packages = {}
    for cfg in sorted(site.glob("resources_servers/*/configs/*.yaml"))[::step]:
        server = cfg.parent.parent
        root = dest / f"{server.name}__{cfg.stem}"
        shutil.copytree(server, root / "resources_servers" / server.name, ignore=_SKIP)
        (root / "configs").mkdir()
        (root / "configs/policy_model.yaml").write_text(_POLICY)
        rel = f"resources_servers/{server.name}/configs/{cfg.name}"
        (root / "nemo-environment.yaml").write_text(
            "format: wheels-v1\nconfig_paths:\n  - configs/policy_model.yaml\n"
            f"  - {rel}\nmetadata:\n  name: gym-tree\n"
        )
        packages[f"gym-tree-{root.name}"] = root
    return packages
