"""Gym config packages assembled in ``tmp_path``: the policy model, an agent with its relay,
and the EK3xx findings of a package (shared by the EK3xx rule and field tests)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import yaml

from envkit.converters.adapter_pkg import policy_model_config
from envkit.model.package import load_package
from envkit.validators import Inputs, run_checks

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.model.diagnostics import Diagnostic

__all__ = ["AGENT", "ENV", "POLICY", "ek3", "make_pkg"]

POLICY = yaml.safe_dump(policy_model_config(), sort_keys=False)
ENV = """\
{agent}_env:
  environment_servers:
    legacy_agent:
      entrypoint: app.py
      agent_server:
        type: responses_api_agents
        name: {agent}
"""
AGENT = """\
agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      model_server:
        type: responses_api_models
        name: policy_model
""" + ENV.format(agent="agent")


def make_pkg(tmp_path: Path, configs: dict[str, str], order: list[str] | None = None) -> Path:
    """A wheels-v1 style package with ``configs`` (path -> YAML) listed in ``order``."""
    listed = order if order is not None else list(configs)
    manifest = "format: wheels-v1\nconfig_paths:\n" + "".join(f"  - {p}\n" for p in listed)
    (tmp_path / "nemo-environment.yaml").write_text(manifest + "metadata:\n  name: t\n")
    for rel, text in configs.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    return tmp_path


def ek3(pkg: Path) -> list[Diagnostic]:
    diags = run_checks(Inputs(package=load_package(pkg)))
    return [d for d in diags if d.code.startswith("EK3")]
