"""EK304-EK306, EK312, EK314, EK317: how the servers refer to each other and to the policy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envkit.model.diagnostics import close_matches
from envkit.model.package import MANIFEST, safe_relpath
from envkit.validators._base import yaml_line
from envkit.validators.gym.model import includes_of, own_servers, view_of
from envkit.validators.gym.rules import (
    AGENTS,
    EK304,
    EK305,
    EK306,
    EK312,
    EK314,
    EK317,
    ENVS,
    MODELS,
    POLICY_MODEL,
    RESOURCES,
    E,
    W,
)
from envkit.validators.gym.shapes import find_refs, fmt_keypath

if TYPE_CHECKING:
    from collections.abc import Iterator

    from envkit.model.diagnostics import Diagnostic
    from envkit.validators._base import Inputs
    from envkit.validators.gym.model import GymView, Instance
    from envkit.validators.gym.shapes import Ref

__all__ = ["check_environment_relays", "check_model_pairings", "check_policy_endpoint",
           "check_policy_model", "check_refs"]


def _gym_hint(ref: Ref, view: GymView) -> str:
    """Gym's own wording (``validate_and_populate_defaults``): close names, else what exists."""
    same_type = [i.name for i in view.servers(ref.server_type)]
    close = close_matches(ref.name, same_type, n=3, cutoff=0.6)
    if close:
        return "Did you mean: " + ", ".join(repr(s) for s in close) + "?"
    available = ", ".join(repr(n) for n in sorted(same_type)) or "(none)"
    return f"Available {ref.server_type}: {available}"


def _ref_excused(ref: Ref, view: GymView, source: Instance) -> bool:
    target = view.instances.get(ref.name)
    if target is not None and target.shape.kind == "malformed":
        return True  # EK301 reports the block itself
    if source.shape.server_type == ENVS and ref.server_type == AGENTS:
        renamed = view.renamed.get(ref.name)
        if renamed and any(i.name == renamed for i in view.servers(AGENTS)):
            return True  # Gym retargets the relay to the single `_inherit_from` destination
    # EK305 reports a missing policy model once, not at every ref to it.
    return ref.name == POLICY_MODEL and ref.server_type == MODELS and not _policy_models(view)


def check_refs(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK304: `{type, name}` refs must name an instance of that type in the merged config."""
    view = view_of(inputs.package)
    if view is None or view.incomplete:
        return
    defined = {(i.shape.server_type, i.name) for i in view.servers()}
    for instance in view.servers():
        for ref in find_refs(instance.shape.fields):
            known = (ref.server_type, ref.name) in defined or "${" in ref.name
            if known or _ref_excused(ref, view, instance):
                continue
            keypath = instance.field_path(*ref.keypath)
            path, line = instance.locate(*keypath)
            message = (f"`{fmt_keypath((instance.name, *keypath))}` references "
                       f"{ref.server_type}/{ref.name!r}, which no config defines")
            if not ref.direct:
                message += " (nested: Gym does not check it at spin-up; the server fails using it)"
            yield EK304.at(path, message, line=line, hint=_gym_hint(ref, view),
                           severity=E if ref.direct else W)


def _policy_models(view: GymView) -> list[Instance]:
    return [i for i in view.servers(MODELS) if i.name == POLICY_MODEL]


def check_policy_model(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK305/EK306: a `policy_model` model server, defined by the first `config_paths` file."""
    view, pkg = view_of(inputs.package), inputs.package
    if view is None or pkg is None or view.incomplete:
        return
    found = _policy_models(view)
    existing = view.instances.get(POLICY_MODEL)
    if existing is not None and existing.shape.kind == "malformed":
        return  # EK301/EK307 report the broken block itself
    if not found:
        detail = (
            f" (`{POLICY_MODEL}` is a {existing.shape.server_type} block)"
            if existing is not None and existing.shape.server_type else ""
        )
        message = f"no config defines a `{POLICY_MODEL}` {MODELS} instance{detail}"
        yield EK305.at(MANIFEST, message, line=yaml_line(pkg.manifest, "config_paths"))
        return
    first = next((p for p in (safe_relpath(v) for v in pkg.config_paths()) if p), None)
    defining = {d.path for d in found[0].defs}
    if first is None or first in defining:
        return
    if not defining.intersection(includes_of(pkg, first, view.docs.get(first))):
        message = (f"`{POLICY_MODEL}` is defined in {sorted(defining)[0]}, but `config_paths` "
                   f"starts with {first}")
        yield EK306.at(MANIFEST, message, line=yaml_line(pkg.manifest, "config_paths", 0))


_POLICY_FIELDS = {"base_url": "${policy_base_url}", "model": "${policy_model_name}"}


def check_policy_endpoint(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK312: the policy model must point at the job's endpoint, not a fixed one."""
    view = view_of(inputs.package)
    for instance in _policy_models(view) if view else ():
        for key, expected in _POLICY_FIELDS.items():
            value = instance.shape.fields.get(key)
            if value is None or (isinstance(value, str) and expected in value):
                continue
            path, line = instance.locate(*instance.field_path(key))
            message = f"`{POLICY_MODEL}` `{key}: {value!r}` is hard-coded instead of `{expected}`"
            yield EK312.at(path, message, line=line)


def _relayed_agents(view: GymView) -> set[str]:
    """Gym's ``environment_server_agent_refs``: typed agent refs, or an untyped `agent_server`."""
    return {view.renamed.get(value["name"], value["name"]) for env in view.servers(ENVS)
            for key, value in env.shape.fields.items() if _names_agent(key, value)}


def _names_agent(key: str, value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return False
    return value.get("type") == AGENTS or (key == "agent_server" and value.get("type") is None)


def _unbound(instance: Instance) -> bool:
    ref = instance.shape.fields.get("resources_server")
    return isinstance(ref, dict) and ref.get("name") == "???"


def check_environment_relays(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK314: every agent should be fronted by an `environment_servers` block."""
    view = view_of(inputs.package)
    if view is None or view.incomplete:
        return
    relayed = _relayed_agents(view)
    for agent in own_servers(view, AGENTS):
        if agent.name in relayed or _unbound(agent):
            continue
        path, line = agent.locate()
        yield EK314.at(path, f"agent `{agent.name}` has no environment server naming it",
                       line=line)


def _ref_name(fields: Mapping[str, Any], key: str, server_type: str) -> str | None:
    ref = fields.get(key)
    if not isinstance(ref, dict) or ref.get("type") != server_type:
        return None
    name = ref.get("name")
    return name if isinstance(name, str) else None


def _pairing(view: GymView, agent: Instance) -> tuple[Instance, Instance, Any] | None:
    """``(resources, model, allowed)`` when the agent's resources server restricts adapters."""
    fields = agent.shape.fields
    resources = view.instances.get(_ref_name(fields, "resources_server", RESOURCES) or "")
    model = view.instances.get(_ref_name(fields, "model_server", MODELS) or "")
    if resources is None or model is None or resources.shape.server_type != RESOURCES:
        return None
    allowed = resources.shape.fields.get("allowed_model_types")
    if not allowed or model.shape.server_type != MODELS:
        return None
    return resources, model, allowed


def check_model_pairings(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK317: Gym's ``raise_on_unsupported_model_pairings``, agent by agent."""
    view = view_of(inputs.package)
    if view is None or view.merged.get("allow_unsupported_pairing"):
        return
    for agent in view.servers(AGENTS):
        found = _pairing(view, agent)
        if found is None:
            continue
        resources, model, allowed = found
        path, line = resources.locate(*resources.field_path("allowed_model_types"))
        if isinstance(allowed, str):
            allowed = [allowed]
        if not isinstance(allowed, list):
            message = f"`{resources.name}`: `allowed_model_types` must be a list of model types"
            yield EK317.at(path, message, line=line)
        elif model.shape.impl not in [str(a) for a in allowed]:
            message = (f"agent `{agent.name}` pairs `{resources.name}` with `{model.name}` "
                       f"({model.shape.impl}), but it accepts only: {', '.join(map(str, allowed))}")
            yield EK317.at(path, message, line=line)
