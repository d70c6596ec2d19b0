"""Plan an environment package from Gym server directories: which files go where.

Planning returns a ``TreePlan`` and writes nothing: ``envkit.builder.build`` owns every side
effect. Facts it encodes (the pinned Gym version, the "GRPO and Reward Environments" guide):
- a server directory is ``<server_type>/<impl>/`` with ``requirements.txt`` or
  ``pyproject.toml``; the structure is kept so Gym finds the implementation it runs;
- ``.jsonl`` cannot ship in the package: every one moves to the dataset directory
  (``gym_configs``); configs defining instances the chosen ones reference come along;
- ``config_paths`` lists the policy model first;
- Gym's non-editable install drops requirement lines containing ``../..`` (the
  ``-e nemo-gym[dev] @ ../../`` line) and installs ``nemo-gym==<image version>`` instead.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from envkit.converters.gym_configs import (
    POLICY_INSTANCE,
    GymTreeError,
    TreePlan,
    add_agents,
    add_policy_model,
    rewrite_config,
)
from envkit.model.gym_data import gym_data
from envkit.model.package import INSTALL_MARKERS, MANIFEST, SERVER_TYPES
from envkit.model.secrets import secret_left_out
from envkit.model.yamlio import YamlReadError, read_mapping

__all__ = ["FORMATS", "GymTreeError", "ServerSource", "TreePlan", "discover_servers", "plan_tree",
           "server_requirements"]

FORMATS = ("wheels-v1", "native-v1")
_SKIP_DIRS = frozenset({"__pycache__", ".venv", ".git", ".pytest_cache", ".ruff_cache"})
_AGENTS_FILE = "envkit_agents.yaml"


@dataclass(frozen=True, slots=True)
class ServerSource:
    """One ``<server_type>/<impl>/`` directory of a Gym tree and the configs chosen from it."""

    server_type: str
    impl: str
    path: Path
    configs: tuple[str, ...]
    """File names under ``configs/`` that go into ``config_paths``."""

    @property
    def rel(self) -> str:
        return f"{self.server_type}/{self.impl}"


def discover_servers(src: Path) -> list[ServerSource]:
    """Servers under ``src``: a server directory itself, or every one of a Gym tree root.

    :raises GymTreeError: ``src`` is neither.
    """
    src = Path(src)
    if not src.is_dir():
        msg = f"{str(src)!r} is not a directory"
        raise GymTreeError(msg)
    if src.parent.name in SERVER_TYPES and _has_marker(src):
        return [_server(src)]
    found = [
        _server(impl)
        for stype in SERVER_TYPES if (src / stype).is_dir()
        for impl in sorted((src / stype).iterdir())
        if impl.is_dir() and _has_marker(impl) and (impl / "configs").is_dir()
    ]
    if not found:
        msg = (f"{str(src)!r} is neither a Gym server directory "
               f"(<server_type>/<impl>/ with requirements.txt or pyproject.toml) nor a Gym tree "
               f"root holding {', '.join(SERVER_TYPES)}")
        raise GymTreeError(msg)
    return found


def _has_marker(path: Path) -> bool:
    return any((path / m).is_file() for m in INSTALL_MARKERS)


def _server(path: Path) -> ServerSource:
    """Default config: ``configs/<impl>.yaml`` when present (Gym's convention), else all
    (sibling configs are usually alternatives that redefine the same instances)."""
    configs = sorted(p.name for p in (path / "configs").glob("*.yaml"))  # none without the dir
    preferred = f"{path.name}.yaml"
    chosen = (preferred,) if preferred in configs else tuple(configs)
    return ServerSource(path.parent.name, path.name, path, chosen)


def server_requirements(server: ServerSource) -> list[str]:
    """Requirement lines Gym installs for ``server`` besides its runtime pins.

    :raises GymTreeError: a line that only a source checkout can satisfy (``-e``, ``-r``).
    """
    req = server.path / "requirements.txt"
    if req.is_file():
        return _requirement_lines(req.read_text("utf-8"), f"{server.rel}/requirements.txt")
    data = tomllib.loads((server.path / "pyproject.toml").read_text("utf-8"))
    deps = data.get("project", {}).get("dependencies", [])
    return [d for d in deps if not d.replace("_", "-").lower().startswith("nemo-gym")]


def _requirement_lines(text: str, where: str) -> list[str]:
    lines = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or "../.." in line:
            continue  # Gym: grep -v -F '../..' requirements.txt
        if line.startswith("-"):
            msg = (f"{where}: {line!r} needs a source checkout; build that project into a "
                   f"wheel and pass its folder with --wheels-dir, naming it by project name")
            raise GymTreeError(msg)
        lines.append(line)
    return lines


def plan_tree(servers: list[ServerSource], fmt: str, name: str,
              description: str | None = None, include: tuple[str, ...] = ()) -> TreePlan:
    """Plan the package for ``servers`` in format ``fmt``.

    Secrets (dotenv and key files, files holding a private key or credentials) are left out,
    each named in ``plan.notes``, unless a glob of ``include`` names them.

    :raises GymTreeError: unknown format, duplicate servers, unreadable configs.
    """
    if not servers:
        msg = "no Gym server to package"
        raise GymTreeError(msg)
    if fmt not in FORMATS:
        msg = f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}"
        raise GymTreeError(msg)
    _refuse_duplicates(servers)
    servers = list(servers)  # referenced servers get appended
    plan = TreePlan()
    instances: dict[str, Mapping[str, Any]] = {}
    server_configs: list[str] = []
    for server in servers:
        _add_server(server, fmt, plan, include)
        for cfg in server.configs:
            rel = f"{server.rel}/configs/{cfg}"
            data = rewrite_config(server.path / "configs" / cfg, rel, plan)
            instances.update(data)
            server_configs.append(rel)
    server_configs += _pull_referenced(servers, fmt, instances, plan, include)
    add_policy_model(plan, fmt, instances)
    plan.config_paths += server_configs
    agents_dir = "configs" if fmt == "wheels-v1" else f"{servers[0].rel}/configs"
    add_agents(plan, f"{agents_dir}/{_AGENTS_FILE}", instances)
    plan.files[MANIFEST] = _manifest(fmt, plan.config_paths, name, description)
    return plan


def _ref_names(node: object) -> set[str]:
    """Instance names of every ``{type: <server_type>, name: ...}`` ref inside ``node``."""
    if isinstance(node, list):
        return set().union(*map(_ref_names, node))
    if not isinstance(node, dict):
        return set()
    own = node.get("type") in SERVER_TYPES and isinstance(node.get("name"), str)
    return set().union({node["name"]} if own else (), *map(_ref_names, node.values()))


def _definitions(root: Path) -> dict[str, Path]:
    """Instance name -> the first config of the Gym tree at ``root`` that defines it."""
    found: dict[str, Path] = {}
    for cfg in sorted(root.glob("*/*/configs/*.yaml")):
        if cfg.parts[-4] not in SERVER_TYPES:
            continue
        try:
            data = read_mapping(cfg)
        except YamlReadError:
            continue  # not a config this tree can lend; the chosen configs are checked
        for name in data:
            found.setdefault(str(name), cfg)
    return found


def _pull_referenced(servers: list[ServerSource], fmt: str, instances: dict[str, Any],
                     plan: TreePlan, include: tuple[str, ...] = ()) -> list[str]:
    """Carry configs that define instances the chosen configs reference (a judge model in
    another directory of the tree): without them Gym raises ``ServerRefNotFoundError``."""
    added: list[str] = []
    index: dict[str, Path] | None = None
    while missing := sorted(_ref_names(instances) - set(instances) - {POLICY_INSTANCE}):
        if index is None:
            index = {}
            for root in sorted({s.path.parent.parent for s in servers}):  # the Gym tree roots
                if any((root / t).is_dir() for t in SERVER_TYPES):
                    index = {**_definitions(root), **index}
        cfgs = {index[m] for m in missing if m in index}
        if not cfgs:
            plan.notes.append(f"no config in the tree defines {', '.join(missing)}")
            break
        for cfg in sorted(cfgs):
            server = _server(cfg.parent.parent)
            rel = f"{server.rel}/configs/{cfg.name}"
            custom = not gym_data().is_builtin(server.server_type, server.impl)
            if custom and server.rel not in {s.rel for s in servers} \
                    and _has_marker(server.path):
                servers.append(server)
                _add_server(server, fmt, plan, include)
            instances.update(rewrite_config(cfg, rel, plan))
            plan.files.setdefault(rel, cfg)
            added.append(rel)
            plan.notes.append(f"added {rel}: it defines instances the configs reference")
    return added


def _refuse_duplicates(servers: list[ServerSource]) -> None:
    seen: dict[str, Path] = {}
    for server in servers:
        if server.rel in seen and seen[server.rel].resolve() != server.path.resolve():
            msg = f"two sources provide {server.rel}/: {seen[server.rel]} and {server.path}"
            raise GymTreeError(msg)
        seen[server.rel] = server.path


def _add_server(server: ServerSource, fmt: str, plan: TreePlan, include: tuple[str, ...]) -> None:
    """The server's files (its ``.jsonl`` to the dataset) and, for wheels-v1, its requirements."""
    if fmt == "wheels-v1":
        plan.requirements[server.rel] = server_requirements(server)
    moved = 0
    for path in sorted(_walk(server.path)):
        rel = f"{server.rel}/{path.relative_to(server.path).as_posix()}"
        if secret_left_out(path, rel, include, plan.notes):
            continue
        if path.suffix == ".jsonl":
            plan.dataset[rel] = path
            moved += 1
        else:
            plan.files[rel] = path
    if moved:
        plan.notes.append(f"{server.rel}: moved {moved} .jsonl file(s) to the dataset directory")


def _walk(root: Path) -> list[Path]:
    """Regular files under ``root``; symlinks are not followed (they could leave the tree)."""
    out = []
    for entry in root.iterdir():
        if entry.is_symlink():
            continue
        if entry.is_dir():
            if entry.name not in _SKIP_DIRS:
                out += _walk(entry)
        elif entry.is_file() and entry.suffix != ".pyc":
            out.append(entry)
    return out


def _manifest(fmt: str, config_paths: list[str], name: str, description: str | None) -> bytes:
    meta: dict[str, str] = {"name": name}
    if description:
        meta["description"] = description
    doc = {"format": fmt, "config_paths": config_paths, "metadata": meta}
    return yaml.safe_dump(doc, sort_keys=False).encode()
