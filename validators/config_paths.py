"""EK104-EK107, EK111-EK113: the manifest's ``config_paths`` entries, as written and on disk.

The *static* half (``config_path_problems``) looks only at the parsed list and is part of
what ``envkit/schemas/manifest.schema.json`` encodes (``manifest.static_problems`` runs it).
The *file* checks compare each entry with the tree ``load_package`` read: existence, kind,
symlinks and escapes. Facts: the "GRPO and Reward Environments" guide ("Choose an environment
format").
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.package import MANIFEST, display_path, safe_relpath
from envkit.validators._base import Inputs, Rule, yaml_line, yaml_type

if TYPE_CHECKING:
    from envkit.model.package import Package
    from envkit.model.yamlio import YamlDoc

__all__ = ["ADAPTER_PREFIX", "CHECKS", "NATIVE_PREFIXES", "RULES", "config_path_problems"]


NATIVE_PREFIXES = ("responses_api_agents/", "resources_servers/", "responses_api_models/")
ADAPTER_PREFIX = "configs/"
_DRIVE = re.compile(r"^[A-Za-z]:")

EK104 = Rule(
    "EK104", Severity.ERROR, "`config_paths` missing, empty, or not a list of strings",
    "Gym starts only the servers whose configs `config_paths` names; a package needs at "
    "least one (the `policy_model` config).",
    "Set `config_paths` to a non-empty list of relative paths, policy model config first.",
)
EK105 = Rule(
    "EK105", Severity.ERROR, "`config_paths` entry absolute, with `..`, or escaping the root",
    "Entries are resolved against the package root on the cluster; absolute paths and `..` "
    "point at files that are not uploaded.",
    "Use a path relative to the package root, without `..`, that stays inside the package.",
)
EK106 = Rule(
    "EK106", Severity.ERROR, "`config_paths` entry missing from the package or not a file",
    "The platform rejects the upload: 'config_paths reference files that are not in the "
    "package'.",
    "Add the file at that path, or fix the entry (paths are relative to the package root).",
)
EK107 = Rule(
    "EK107", Severity.ERROR, "`config_paths` entry is a symlink",
    "FileSet uploads do not preserve symlinks and the platform rejects symlinked configs.",
    "Replace the symlink with a copy of the file.",
)
EK111 = Rule(
    "EK111", Severity.ERROR, "native-v1 `config_paths` entry outside the server-type dirs",
    "native-v1 configs must live in the Gym tree: 'native-v1 config_paths must be under "
    "(responses_api_agents/, resources_servers/, responses_api_models/)'.",
    "Move the config under `responses_api_agents/`, `resources_servers/` or "
    "`responses_api_models/`, or switch to wheels-v1.",
)
EK112 = Rule(
    "EK112", Severity.ERROR, "adapter-wheels-v1 `config_paths` entry outside `configs/`",
    "The platform expects converter output: 'adapter-wheels-v1 config_paths should live "
    "under configs/'.",
    "Move the config under `configs/` and update `config_paths`.",
)
EK113 = Rule(
    "EK113", Severity.WARNING, "duplicate `config_paths` entry",
    "Gym merges the same file twice; harmless today, but usually a copy-paste slip that "
    "hides a missing config.",
    "Remove the repeated entry.",
)


def config_path_problems(data: Mapping[str, Any], doc: YamlDoc | None) -> Iterator[Diagnostic]:
    paths = data.get("config_paths")
    line = yaml_line(doc, "config_paths")
    if "config_paths" not in data:
        yield EK104.at(MANIFEST, "`config_paths` is missing", line=yaml_line(doc))
        return
    if not isinstance(paths, list):
        yield EK104.at(MANIFEST, f"`config_paths` is a {yaml_type(paths)}, not a list",
                       line=line)
        return
    if not paths:
        yield EK104.at(MANIFEST, "`config_paths` is empty", line=line)
    for index, value in enumerate(paths):
        yield from _entry_problems(data.get("format"), index, value, doc)


def _entry_problems(
    fmt: object, index: int, value: object, doc: YamlDoc | None,
) -> Iterator[Diagnostic]:
    where, line = f"`config_paths[{index}]`", yaml_line(doc, "config_paths", index)
    if not isinstance(value, str) or not value:
        what = "empty" if value == "" else f"a {yaml_type(value)}"
        yield EK104.at(MANIFEST, f"{where} is {what}, not a path string", line=line)
        return
    if value.startswith(("/", "\\")) or _DRIVE.match(value):
        yield EK105.at(MANIFEST, f"{where} {value!r} is absolute", line=line)
        return
    if ".." in re.split(r"[/\\]", value):
        yield EK105.at(MANIFEST, f"{where} {value!r} has a `..` segment", line=line)
        return
    # The platform's manifest schema tests the path as written (`str.startswith`), so
    # `./resources_servers/...` is rejected at submit: no normalising here.
    if fmt == "native-v1" and not value.startswith(NATIVE_PREFIXES):
        yield EK111.at(MANIFEST, f"{where} {value!r} is not under a server-type directory "
                       "as written (native-v1; no leading `./`)", line=line)
    elif fmt == "adapter-wheels-v1" and not value.startswith(ADAPTER_PREFIX):
        yield EK112.at(MANIFEST, f"{where} {value!r} is not under `configs/` as written "
                       "(adapter-wheels-v1; no leading `./`)", line=line)


def check_config_files(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK105 (escape through a symlinked dir), EK106, EK107 for each lexically sane entry, and
    EK113 for one listed twice (after normalising `./` and `//`)."""
    pkg = inputs.package
    paths = pkg.manifest_data.get("config_paths") if pkg else None
    if pkg is None or not isinstance(paths, list):
        return
    seen: dict[str, int] = {}
    for index, value in enumerate(paths):
        rel = safe_relpath(value) if isinstance(value, str) and value else None
        if rel is None:
            continue
        where = f"`config_paths[{index}]` {value!r}"
        line = yaml_line(pkg.manifest, "config_paths", index)
        diag = None if ".." in re.split(r"[/\\]", value) else _file_problem(pkg, rel, where, line)
        if diag is not None:
            yield diag
        if rel in seen:
            yield EK113.at(MANIFEST, f"{where} repeats `config_paths[{seen[rel]}]`", line=line)
        else:
            seen[rel] = index


def _file_problem(pkg: Package, rel: str, where: str, line: int | None) -> Diagnostic | None:
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        prefix = pkg.entries.get("/".join(parts[:depth]))
        if prefix is not None and prefix.kind == "symlink":
            if not prefix.link_inside:
                return EK105.at(MANIFEST, f"{where} escapes the package through symlink "
                                f"`{display_path(prefix.path)}`", line=line)
            return EK107.at(MANIFEST, f"{where} goes through symlink "
                            f"`{display_path(prefix.path)}`", line=line)
    entry = pkg.entries.get(rel)
    if entry is None:
        hint = ("Use `/` between path segments: the cluster is Linux, where `\\` is part of a "
                "file name." if "\\" in rel else None)
        return EK106.at(MANIFEST, f"{where} is not in the package", line=line, hint=hint)
    if entry.kind == "symlink":
        return EK107.at(MANIFEST, f"{where} is a symlink (to {entry.link_target!r})", line=line)
    if entry.kind != "file":
        what = "a directory" if entry.kind == "dir" else "not a regular file"
        return EK106.at(MANIFEST, f"{where} is {what}", line=line)
    return None


RULES = (EK104, EK105, EK106, EK107, EK111, EK112, EK113)
CHECKS = (
    check_config_files,  # EK105, EK106, EK107, EK113
)
