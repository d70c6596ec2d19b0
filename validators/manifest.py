"""EK1xx: ``nemo-environment.yaml``, the manifest every package declares itself in.

``static_problems`` looks only at the parsed mapping and is what
``envkit/schemas/manifest.schema.json`` encodes, so a test can prove the two agree; the
``config_paths`` entries are ``config_paths``'s, whose rules and checks are included here.
Facts: the product spec (section 2) and the "GRPO and Reward Environments" guide.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.package import MANIFEST, display_path
from envkit.validators import config_paths
from envkit.validators._base import Inputs, Rule, did_you_mean, yaml_line, yaml_type
from envkit.validators.config_paths import config_path_problems

if TYPE_CHECKING:
    from envkit.model.yamlio import YamlDoc

__all__ = ["ADAPTER_AGENTS", "ADAPTER_KEYS", "CHECKS", "FORMATS", "METADATA_KEYS", "RULES",
           "STATIC_CODES", "TOP_LEVEL_KEYS", "static_problems"]

FORMATS = ("native-v1", "wheels-v1", "adapter-wheels-v1")
TOP_LEVEL_KEYS = ("format", "config_paths", "metadata", "adapter")
METADATA_KEYS = ("name", "description", "hub_id", "vf_env_id", "adapter_agent")
ADAPTER_KEYS = ("agent", "agent_type", "image_config_root")
ADAPTER_AGENTS = ("verifiers_agent",)
"""Harnesses built into the training image (the "GRPO and Reward Environments" guide: "the only
harness built into the image")."""
ADAPTER_AGENT_TYPE = "responses_api_agents"
MAX_NAME = 255
MAX_DESCRIPTION = 2048

EK100 = Rule(
    "EK100", Severity.ERROR, "`nemo-environment.yaml` missing at the package root",
    "The platform looks for the manifest only at the FileSet root and rejects the upload with "
    "'Missing nemo-environment.yaml at environment root'. The usual cause is an upload of "
    "`./pkg` instead of `./pkg/`: without the trailing slash the FileSet nests everything one "
    "level deeper (the \"GRPO and Reward Environments\" guide, 'Upload both FileSets').",
    "Add `nemo-environment.yaml` at the package root (see `envkit schema manifest`).",
)
EK101 = Rule(
    "EK101", Severity.ERROR, "manifest is not valid YAML or not a mapping",
    "Nothing else in the package can be checked, or trained, without a readable manifest.",
    "Make `nemo-environment.yaml` a UTF-8 YAML mapping with `format`, `config_paths` and "
    "`metadata`.",
)
EK102 = Rule(
    "EK102", Severity.ERROR, "unknown manifest key",
    "The manifest schema is closed at every level: the platform rejects unknown keys, so a "
    "typo such as `config_path` fails the upload instead of being ignored.",
    "Remove the key or fix its spelling (`envkit schema manifest` lists the allowed keys).",
)
EK103 = Rule(
    "EK103", Severity.ERROR, "`format` missing or unknown",
    "`format` is the discriminator that decides where `config_paths` may live and whether "
    "`wheels/` is installed.",
    f"Set `format` to one of {', '.join(FORMATS)}.",
)
EK108 = Rule(
    "EK108", Severity.ERROR, "`metadata` invalid: `name` missing/empty/too long, "
    "`description` too long, or a field that is not a string",
    f"`metadata.name` (1-{MAX_NAME} characters) names the environment on the platform; "
    f"`description` is capped at {MAX_DESCRIPTION} characters.",
    f"Set `metadata.name` to 1-{MAX_NAME} characters and keep `description` within "
    f"{MAX_DESCRIPTION}.",
)
EK109 = Rule(
    "EK109", Severity.ERROR, "`adapter` block on a non-adapter format, or missing on "
    "adapter-wheels-v1",
    "Only adapter-wheels-v1 takes its agent harness from the training image, and it must say "
    "which one; the other formats ship their agents and reject the block.",
    "Add `adapter: {agent: verifiers_agent, agent_type: responses_api_agents}` to an "
    "adapter-wheels-v1 manifest; remove `adapter` from any other format.",
)
EK110 = Rule(
    "EK110", Severity.ERROR, "`adapter.agent` not built into the training image, or bad "
    "`agent_type`",
    "The harness comes from the training image, which today carries only `verifiers_agent`: "
    "'adapter.agent ... is not built into the training image'.",
    f"Use `agent: {ADAPTER_AGENTS[0]}` and `agent_type: {ADAPTER_AGENT_TYPE}`, or switch "
    "to wheels-v1 and ship the agent.",
)

RULES = tuple(sorted((EK100, EK101, EK102, EK103, EK108, EK109, EK110, *config_paths.RULES),
                    key=lambda rule: rule.code))
STATIC_CODES = frozenset({"EK101", "EK102", "EK103", "EK104", "EK105", "EK108", "EK109",
                          "EK110", "EK111", "EK112"})
"""Codes the JSON Schema can express; ``static_problems`` yields only these."""


# --- EK100 / EK101: the manifest itself --------------------------------------------------


def check_manifest_present(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK100: without the manifest at the root the platform rejects the upload."""
    pkg = inputs.package
    if pkg is None or pkg.manifest is not None:
        return
    if pkg.nested_manifest:
        parent = pkg.nested_manifest.split("/", 1)[0]
        yield EK100.at(
            MANIFEST,
            f"`{MANIFEST}` is missing at the root but `{display_path(pkg.nested_manifest)}` "
            "exists one directory down",
            hint=f"Validate `{display_path(parent)}/` instead, and upload it with a trailing "
            f"slash (`nemo files upload ./{display_path(parent)}/ ...`): the slash selects the "
            "directory's contents; without it everything nests one level deeper, as here.",
        )
        return
    yield EK100.at(MANIFEST, f"`{MANIFEST}` is missing at the package root")


def check_manifest(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK101-EK105, EK108-EK112: a readable mapping, then the closed, discriminated schema (an
    unreadable or non-mapping manifest stops every other manifest check)."""
    doc = inputs.package.manifest if inputs.package else None
    if doc is None:
        return
    if not doc.ok:
        yield EK101.at(MANIFEST, f"`{MANIFEST}`: {doc.error}", line=doc.error_line)
    else:
        yield from static_problems(doc.data, doc)


# --- static checks: the mapping alone (mirrored by manifest.schema.json) -------------------


def static_problems(data: Any, doc: YamlDoc | None = None) -> list[Diagnostic]:
    """Every schema-level problem of a parsed manifest; ``doc`` only supplies line numbers."""
    if not isinstance(data, Mapping):
        kind = "empty" if data is None else f"a {yaml_type(data)}"
        return [_at(EK101, doc, (), f"`{MANIFEST}` is {kind}, not a mapping")]
    return [*_unknown_keys(data, (), TOP_LEVEL_KEYS, doc), *_format_problems(data, doc),
            *config_path_problems(data, doc), *_metadata_problems(data, doc),
            *_adapter_problems(data, doc)]


def _misplaced(key: str, here: tuple[str, ...]) -> str | None:
    """``name`` at the top level belongs in ``metadata``: say so."""
    homes = {"metadata": METADATA_KEYS, "adapter": ADAPTER_KEYS, "": TOP_LEVEL_KEYS}
    for home, keys in homes.items():
        if key in keys and (home,) != (here[:1] or ("",)):
            return f"{home}.{key}" if home else key
    return None


def _unknown_keys(
    block: Mapping[Any, Any], here: tuple[str, ...], allowed: tuple[str, ...],
    doc: YamlDoc | None,
) -> Iterator[Diagnostic]:
    for key in block:
        if isinstance(key, str) and key in allowed:
            continue
        where = ".".join((*here, str(key)))
        typo = did_you_mean(key, allowed, *here) if isinstance(key, str) else None
        home = _misplaced(key, here) if isinstance(key, str) else None
        listed = f"Allowed keys here: {', '.join(f'`{k}`' for k in allowed)}."
        hint = typo or (f"Move it to `{home}`." if home else listed)
        yield _at(EK102, doc, (*here, str(key)), f"unknown key `{where}`", hint)


def _format_problems(data: Mapping[str, Any], doc: YamlDoc | None) -> Iterator[Diagnostic]:
    value = data.get("format")
    if "format" not in data:
        yield _at(EK103, doc, (), "`format` is missing")
    elif value not in FORMATS:
        hint = did_you_mean(value, FORMATS) if isinstance(value, str) else None
        yield _at(EK103, doc, ("format",), f"`format` is {value!r}, not one of "
                  f"{', '.join(FORMATS)}", hint)


def _metadata_problems(data: Mapping[str, Any], doc: YamlDoc | None) -> Iterator[Diagnostic]:
    meta = data.get("metadata")
    if "metadata" not in data:
        yield _at(EK108, doc, (), "`metadata` is missing (it needs at least `metadata.name`)")
    elif not isinstance(meta, Mapping):
        yield _at(EK108, doc, ("metadata",), f"`metadata` is a {yaml_type(meta)}, not a mapping")
    else:
        yield from _unknown_keys(meta, ("metadata",), METADATA_KEYS, doc)
        yield from _metadata_values(meta, doc)


def _metadata_values(meta: Mapping[str, Any], doc: YamlDoc | None) -> Iterator[Diagnostic]:
    name, desc = meta.get("name"), meta.get("description")
    if "name" not in meta:
        yield _at(EK108, doc, ("metadata",), "`metadata.name` is missing")
    elif isinstance(name, str) and not name:
        yield _at(EK108, doc, ("metadata", "name"), "`metadata.name` is empty")
    elif isinstance(name, str) and len(name) > MAX_NAME:
        yield _at(EK108, doc, ("metadata", "name"),
                  f"`metadata.name` is {len(name)} characters (max {MAX_NAME})")
    if isinstance(desc, str) and len(desc) > MAX_DESCRIPTION:
        yield _at(EK108, doc, ("metadata", "description"),
                  f"`metadata.description` is {len(desc)} characters (max {MAX_DESCRIPTION})")
    for key in METADATA_KEYS:
        if key in meta and not isinstance(meta[key], str):
            yield _at(EK108, doc, ("metadata", key),
                      f"`metadata.{key}` is a {yaml_type(meta[key])}, not a string",
                      f"Quote the value of `metadata.{key}`.")


def _adapter_problems(data: Mapping[str, Any], doc: YamlDoc | None) -> Iterator[Diagnostic]:
    fmt, adapter = data.get("format"), data.get("adapter")
    if fmt not in FORMATS:
        return  # EK103 already; which adapter rule applies depends on the format
    if fmt != "adapter-wheels-v1":
        if "adapter" in data:
            yield _at(EK109, doc, ("adapter",), "`adapter` is only allowed with format "
                      f"adapter-wheels-v1, not {fmt}",
                      "Remove the `adapter` block, or use format adapter-wheels-v1.")
    elif "adapter" not in data:
        yield _at(EK109, doc, (), "`adapter` is missing (required for adapter-wheels-v1)")
    elif not isinstance(adapter, Mapping):
        yield _at(EK109, doc, ("adapter",), f"`adapter` is a {yaml_type(adapter)}, not a mapping")
    else:
        yield from _unknown_keys(adapter, ("adapter",), ADAPTER_KEYS, doc)
        yield from _adapter_values(adapter, doc)


def _adapter_values(adapter: Mapping[str, Any], doc: YamlDoc | None) -> Iterator[Diagnostic]:
    agent, agent_type = adapter.get("agent"), adapter.get("agent_type")
    if agent not in ADAPTER_AGENTS:
        what = "missing" if "agent" not in adapter else f"{agent!r}"
        yield _at(EK110, doc, ("adapter", "agent"), f"`adapter.agent` is {what}; the training "
                  f"image only has {', '.join(ADAPTER_AGENTS)}")
    if agent_type != ADAPTER_AGENT_TYPE:
        what = "missing" if "agent_type" not in adapter else f"{agent_type!r}"
        yield _at(EK110, doc, ("adapter", "agent_type"),
                  f"`adapter.agent_type` is {what}, not {ADAPTER_AGENT_TYPE!r}")
    root = adapter.get("image_config_root")
    if "image_config_root" in adapter and not isinstance(root, str):
        yield _at(EK110, doc, ("adapter", "image_config_root"),
                  f"`adapter.image_config_root` is a {yaml_type(root)}, not a string")


def _at(rule: Rule, doc: YamlDoc | None, keypath: tuple[str | int, ...], message: str,
        hint: str | None = None) -> Diagnostic:
    """``rule`` in the manifest, at the line of ``keypath``."""
    return rule.at(MANIFEST, message, line=yaml_line(doc, *keypath), hint=hint)


CHECKS = (
    check_manifest_present,  # EK100
    check_manifest,  # EK101-EK105, EK108-EK112
    *config_paths.CHECKS,  # EK105-EK107, EK113
)
