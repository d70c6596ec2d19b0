"""EK3xx: the package's Gym configs, checked the way nemo-gym 0.7 reads them at spin-up.

Every fact here was checked against the real parser (``nemo_gym.global_config``,
``nemo_gym.config_types``, ``nemo_gym.cli.env``) and is re-checked by
``tests/test_gym_fidelity.py``, which loads each fixture with Gym itself. Where a config is
wrong in a way Gym aborts on, the rule is an error; where Gym accepts it but the run silently
does something else (a skipped block, an override, a deferred failure), it is a warning.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envkit.validators._base import Rule
from envkit.validators._gym_interp import find_interpolation_problems
from envkit.validators._gym_model import Instance, build_view, find_refs

from envkit.diagnostics import Severity
from envkit.gym_data import builtin_configs, gym_data
from envkit.package import MANIFEST, safe_relpath

if TYPE_CHECKING:
    from collections.abc import Iterator

    from envkit.validators._base import Check, Inputs
    from envkit.validators._gym_model import GymView, Ref

    from envkit.diagnostics import Diagnostic
    from envkit.package import Package

__all__ = ["CHECKS", "RULES"]

E, W = Severity.ERROR, Severity.WARNING
POLICY_MODEL = "policy_model"
_MODELS, _RESOURCES = "responses_api_models", "resources_servers"
_AGENTS, _ENVS = "responses_api_agents", "environment_servers"

EK300 = Rule(
    "EK300", E, "Gym config is not valid YAML or not a mapping",
    "Gym loads each config with OmegaConf and merges mappings; anything else aborts spin-up.",
    "Make the file a YAML mapping of `<instance>: {<server_type>: {<impl>: {...}}}`.",
)
EK301 = Rule(
    "EK301", E, "server block has the wrong shape",
    "A block needs exactly one known server type holding exactly one implementation with an "
    "`entrypoint`. Gym aborts on a near-miss that has an entrypoint (AlmostServerError) and "
    "silently skips the rest, so anything that refers to the block fails "
    "(ServerRefNotFoundError) and the server never runs.",
    "Write `<instance>: {<server_type>: {<impl>: {entrypoint: app.py, ...}}}`.",
)
EK302 = Rule(
    "EK302", E, "`resources_servers` block without a valid `domain`",
    "Gym validates `domain` against a closed set on every resources server; missing or invalid "
    "makes it an almost-server and spin-up aborts with AlmostServerError.",
    f"Set `domain:` to one of: {', '.join(sorted(gym_data().domains))}.",
)
EK303 = Rule(
    "EK303", E, "invalid `domain` on an agent, model or environment block",
    "Gym 0.7 validates `domain` against the closed set on every server type before it strips "
    "it from non-resources blocks, so an empty or unknown value is an almost-server "
    "(AlmostServerError). A valid value is accepted and ignored.",
    "Remove `domain` from this block (or use a value from the closed set).",
)
EK304 = Rule(
    "EK304", E, "reference to an undefined server instance",
    "Gym resolves every `{type, name}` ref in a server's fields against the merged config and "
    "aborts with ServerRefNotFoundError. Refs nested deeper are not checked at spin-up; they "
    "fail when the server uses them (warning).",
    "Name an instance (top-level key) of that type, or add the config that defines it.",
)
EK305 = Rule(
    "EK305", E, "no `policy_model` instance of type `responses_api_models`",
    "The training job points Gym's `policy_model` at its own vLLM engine; configs refer to it "
    "by that name. Without it spin-up fails: `Available responses_api_models: (none)`.",
    "Add configs/policy_model.yaml (`policy_model: {responses_api_models: {vllm_model: ...}}`) "
    "first in `config_paths`.",
)
EK306 = Rule(
    "EK306", W, "`policy_model` config is not first in `config_paths`",
    "Later configs override earlier ones; the platform guide lists the policy model first so "
    "the job's endpoint is the base every other config builds on.",
    "Move the policy model config to the top of `config_paths`.",
)
EK307 = Rule(
    "EK307", E, "instance defined twice with conflicting bodies",
    "Gym deep-merges all configs: two files that give one instance different server types or "
    "implementations merge into an invalid block (AlmostServerError); differing values are "
    "silently overridden by the later file (warning).",
    "Rename one instance, or keep one definition.",
)
EK308 = Rule(
    "EK308", E, "implementation directory missing and not a Gym built-in",
    "Gym runs `<server_type>/<impl>/` from the package or, failing that, its own built-ins; "
    "neither exists, so the server cannot start.",
    "Ship `<server_type>/<impl>/` (code + requirements.txt), or use a built-in implementation.",
)
EK309 = Rule(
    "EK309", E, "custom implementation shadows a Gym built-in but has no install marker",
    "Gym recognises a server directory only by `requirements.txt` or `pyproject.toml`; without "
    "one it silently runs its own built-in of the same name and trains the wrong environment.",
    "Add `requirements.txt` to the directory, or rename the implementation.",
)
EK310 = Rule(
    "EK310", E, "`entrypoint` file missing in the implementation directory",
    "Gym starts the server by running `<server_type>/<impl>/<entrypoint>` with the server's "
    "venv interpreter; a missing file fails spin-up.",
    "Ship the entrypoint file, or fix `entrypoint:`.",
)
EK311 = Rule(
    "EK311", W, "`datasets[].jsonl_fpath` points inside the package",
    "Prompt rows cannot ship in the environment package (no `.jsonl` allowed); they go to the "
    "dataset FileSet.",
    "Move the rows to the dataset directory and drop or repoint `jsonl_fpath`.",
)
EK312 = Rule(
    "EK312", W, "policy model endpoint hard-coded",
    "The job injects its own vLLM endpoint as `${policy_base_url}` / `${policy_model_name}`; a "
    "hard-coded value sends rollouts somewhere else.",
    "Use `base_url: ${policy_base_url}`, `api_key: ${policy_api_key}`, "
    "`model: ${policy_model_name}`.",
)
EK313 = Rule(
    "EK313", E, "unresolvable interpolation or `???` left",
    "Gym resolves top-level values and each server's direct fields while it parses the config "
    "(ConfigInterpolationError / ConfigMissingValuesError); nested values fail later, when the "
    "server reads them (warning).",
    "Define the key in a config of the package, give `${oc.env:VAR,default}` a default, or "
    "set the value.",
)
EK314 = Rule(
    "EK314", W, "agent with no `environment_servers` block relaying it",
    "Gym 0.7 generates a legacy_agent relay with a deprecation warning; a later Gym raises "
    "AgentWithoutEnvironmentServerError.",
    "Add `<agent>_environment_server: {environment_servers: {legacy_agent: {entrypoint: app.py, "
    "agent_server: {type: responses_api_agents, name: <agent>}}}}`.",
)
EK315 = Rule(
    "EK315", E, "invalid `datasets[]` entry",
    "Gym validates every dataset entry (DatasetConfig); a bad one makes the whole server an "
    "almost-server and spin-up aborts (AlmostServerError).",
    "Give each entry `name`, `type` and `jsonl_fpath`; `num_repeats >= 1`; a `license` from "
    "Gym's list for train/validation.",
)

EK316 = Rule(
    "EK316", E, "config pulled in by a config's `config_paths` is not found",
    "Gym loads every path in a config's own `config_paths`, from the package (its cwd) or else "
    "from its install root; a path in neither aborts spin-up (ConfigPathNotFoundError).",
    "Ship the config in the package at that path, or drop the entry.",
)

EK317 = Rule(
    "EK317", E, "resources server does not accept the agent's model adapter",
    "A resources server may declare `allowed_model_types`; Gym rejects an agent that pairs it "
    "with a model server of another implementation (UnsupportedModelPairingError). The job's "
    "policy model is the package's `policy_model` implementation (usually `vllm_model`).",
    "Add the model implementation to `allowed_model_types`, or point the agent at a model "
    "server it accepts.",
)

RULES = (EK300, EK301, EK302, EK303, EK304, EK305, EK306, EK307, EK308, EK309, EK310,
         EK311, EK312, EK313, EK314, EK315, EK316, EK317)


def _fmt(keypath: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in keypath).lstrip(".")


_LAST_VIEW: list[tuple[Package, GymView]] = []
"""The view of the last package seen: every check reads the same frozen package in one run."""


def _view(inputs: Inputs) -> GymView | None:
    pkg = inputs.package
    if pkg is None or not pkg.configs:
        return None
    if _LAST_VIEW and _LAST_VIEW[0][0] is pkg:
        return _LAST_VIEW[0][1]
    view = build_view(pkg)
    _LAST_VIEW[:] = [(pkg, view)]
    return view


def _own_servers(view: GymView | None, server_type: str | None = None) -> list[Instance]:
    """Servers the package itself writes (not only Gym's built-in configs it pulls in)."""
    if view is None:
        return []
    return [i for i in view.servers(server_type) if not i.only_in(view.builtin)]


# EK300 ---------------------------------------------------------------------------------------


def check_config_docs(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK300: each config must parse and be a mapping (an empty file is an empty mapping)."""
    pkg = inputs.package
    for path, doc in (pkg.configs if pkg else {}).items():
        if not doc.ok:
            yield EK300.at(path, f"cannot be read as YAML: {doc.error}", line=doc.error_line)
        elif doc.data is not None and not isinstance(doc.data, Mapping):
            kind = type(doc.data).__name__
            yield EK300.at(path, f"top level is a {kind}, not a mapping", line=doc.line_of())


# EK301 / EK307 -------------------------------------------------------------------------------


def _referenced_names(view: GymView) -> set[str]:
    names: set[str] = set()
    for instance in view.instances.values():
        body = instance.body
        for value in body.values() if isinstance(body, Mapping) else ():
            for impl_fields in value.values() if isinstance(value, Mapping) else ():
                if isinstance(impl_fields, Mapping):
                    names.update(r.name for r in find_refs(impl_fields))
    return names


def _type_impl(body: Any) -> tuple[str, str] | None:
    if not isinstance(body, Mapping):
        return None
    for key, inner in body.items():
        if isinstance(inner, Mapping) and len(inner) == 1 and key in (
            _MODELS, _RESOURCES, _AGENTS, _ENVS,
        ):
            return str(key), str(next(iter(inner)))
    return None


def _conflicting_kinds(instance: Instance) -> tuple[str, str] | None:
    """The first two files that give ``instance`` different server types / implementations."""
    seen: dict[tuple[str, str], str] = {}
    for definition in instance.defs:
        kind = _type_impl(definition.body)
        if kind is not None:
            seen.setdefault(kind, definition.path)
    if len(seen) < 2:
        return None
    (first, first_path), (second, second_path) = list(seen.items())[:2]
    return f"`{'.'.join(first)}` in {first_path}", f"`{'.'.join(second)}` in {second_path}"


def check_server_shapes(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK301: every server block as Gym validates it, after merging all configs."""
    view = _view(inputs)
    if view is None:
        return
    referenced = _referenced_names(view)
    for instance in view.instances.values():
        shape = instance.shape
        if shape.kind != "malformed" or _conflicting_kinds(instance):
            continue
        if instance.only_in(view.builtin):
            continue  # Gym's own config, known only in summary
        path, line = instance.locate(*shape.keypath)
        loud = shape.loud or instance.name in referenced
        effect = (
            shape.effect if shape.loud
            else "Gym skips it, so refs to it fail" if loud
            else "Gym silently skips it: this server never runs"
        )
        message = f"`{instance.name}`: {shape.problem}; {effect}"
        yield EK301.at(path, message, line=line, hint=shape.hint, severity=E if loud else W)


def _scalar_conflicts(
    instance: Instance, roots: set[str]
) -> Iterator[tuple[tuple[str | int, ...], str, str]]:
    """``(keypath, earlier file, later file)`` for each leaf a later sibling overrides.

    Only files listed in the manifest count: a config overriding what its own `config_paths`
    pulled in is how Gym's configs are meant to be specialised.
    """
    leaves: dict[tuple[str | int, ...], tuple[Any, str]] = {}
    for definition in (d for d in instance.defs if d.path in roots):
        stack: list[tuple[tuple[str | int, ...], Any]] = [((), definition.body)]
        while stack:
            keypath, value = stack.pop()
            if isinstance(value, Mapping):
                stack.extend(((*keypath, k), v) for k, v in value.items())
                continue
            before = leaves.get(keypath)
            if before is not None and before[0] != value and before[1] != definition.path:
                yield keypath, before[1], definition.path
            leaves[keypath] = (value, definition.path)


def check_duplicate_instances(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK307: one instance name in several files: kind conflicts abort, value overrides warn."""
    view, pkg = _view(inputs), inputs.package
    if view is None or pkg is None:
        return
    roots = {p for p in (safe_relpath(v) for v in pkg.config_paths()) if p}
    for instance in view.instances.values():
        conflict = _conflicting_kinds(instance)
        if conflict:
            path, line = instance.defs[-1].path, instance.defs[-1].doc.line_of(instance.name)
            message = (
                f"`{instance.name}` is {conflict[0]} and {conflict[1]}; Gym merges them into "
                "one invalid block (AlmostServerError)"
            )
            yield EK307.at(path, message, line=line)
            continue
        for keypath, earlier, later in _scalar_conflicts(instance, roots):
            line = view.docs[later].line_of(instance.name, *keypath)
            message = (
                f"`{_fmt((instance.name, *keypath))}` is set in {earlier} and again, differently, "
                f"here; Gym keeps this value"
            )
            yield EK307.at(later, message, line=line, severity=W)


# EK302 / EK303 -------------------------------------------------------------------------------


def check_domains(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK302/EK303: Gym validates `domain` on every server type (``Optional[Domain]``)."""
    view = _view(inputs)
    domains = gym_data().domains
    for instance in _own_servers(view):
        fields = instance.shape.fields
        value = fields.get("domain")
        path, line = instance.locate(*instance.field_path("domain"))
        if instance.shape.server_type == _RESOURCES:
            if value is None:
                yield EK302.at(path, f"`{instance.name}` has no `domain`", line=line)
            elif not isinstance(value, str) or value not in domains:
                yield EK302.at(path, f"`{instance.name}`: `domain: {value!r}` is not in Gym's set",
                               line=line)
        elif value is not None and (not isinstance(value, str) or value not in domains):
            yield EK303.at(path, f"`{instance.name}`: `domain: {value!r}` is not in Gym's set "
                                 "(AlmostServerError)", line=line)


# EK304 ---------------------------------------------------------------------------------------


def _gym_hint(ref: Ref, view: GymView) -> str:
    """Gym's own wording (``validate_and_populate_defaults``): close names, else what exists."""
    same_type = [i.name for i in view.servers(ref.server_type)]
    close = difflib.get_close_matches(ref.name, same_type, n=3, cutoff=0.6)
    if close:
        return "Did you mean: " + ", ".join(repr(s) for s in close) + "?"
    available = ", ".join(repr(n) for n in sorted(same_type)) or "(none)"
    return f"Available {ref.server_type}: {available}"


def _ref_excused(ref: Ref, view: GymView, source: Instance) -> bool:
    target = view.instances.get(ref.name)
    if target is not None and target.shape.kind == "malformed":
        return True  # EK301 reports the block itself
    if source.shape.server_type == _ENVS and ref.server_type == _AGENTS:
        renamed = view.renamed.get(ref.name)
        if renamed and any(i.name == renamed for i in view.servers(_AGENTS)):
            return True  # Gym retargets the relay to the single `_inherit_from` destination
    # EK305 reports a missing policy model once, not at every ref to it.
    return ref.name == POLICY_MODEL and ref.server_type == _MODELS and not _policy_models(view)


def check_refs(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK304: `{type, name}` refs must name an instance of that type in the merged config."""
    view = _view(inputs)
    if view is None or view.incomplete:
        return
    defined = {(i.shape.server_type, i.name) for i in view.servers()}
    for instance in view.servers():
        for ref in find_refs(instance.shape.fields):
            if (ref.server_type, ref.name) in defined or "${" in ref.name:
                continue
            if _ref_excused(ref, view, instance):
                continue
            path, line = instance.locate(*instance.field_path(*ref.keypath))
            where = _fmt((instance.name, *instance.field_path(*ref.keypath)))
            message = (
                f"`{where}` references {ref.server_type}/{ref.name!r}, which no config defines"
            )
            if not ref.direct:
                message += " (nested: Gym does not check it at spin-up; the server fails using it)"
            yield EK304.at(path, message, line=line, hint=_gym_hint(ref, view),
                           severity=E if ref.direct else W)


# EK305 / EK306 / EK312 -----------------------------------------------------------------------


def _policy_models(view: GymView) -> list[Instance]:
    return [i for i in view.servers(_MODELS) if i.name == POLICY_MODEL]


def _manifest_line(pkg: Package, *keypath: str | int) -> int | None:
    return pkg.manifest.line_of(*keypath) if pkg.manifest else None


def check_policy_model(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK305/EK306: a `policy_model` model server, defined by the first `config_paths` file."""
    view, pkg = _view(inputs), inputs.package
    if view is None or pkg is None or view.incomplete:
        return
    found = _policy_models(view)
    existing = view.instances.get(POLICY_MODEL)
    if existing is not None and existing.shape.kind == "malformed":
        return  # EK301/EK307 report the broken block itself
    if not found:
        other = view.instances.get(POLICY_MODEL)
        detail = (
            f" (`{POLICY_MODEL}` is a {other.shape.server_type} block)"
            if other is not None and other.shape.server_type else ""
        )
        message = f"no config defines a `{POLICY_MODEL}` {_MODELS} instance{detail}"
        yield EK305.at(MANIFEST, message, line=_manifest_line(pkg, "config_paths"))
        return
    first = next((p for p in (safe_relpath(v) for v in pkg.config_paths()) if p), None)
    defining = {d.path for d in found[0].defs}
    if first is not None and first not in defining and not _includes(view, first, defining):
        message = (
            f"`{POLICY_MODEL}` is defined in {sorted(defining)[0]}, but `config_paths` starts "
            f"with {first}"
        )
        yield EK306.at(MANIFEST, message, line=_manifest_line(pkg, "config_paths", 0))


def _includes(view: GymView, first: str, defining: set[str]) -> bool:
    doc = view.docs.get(first)
    data = doc.data if doc is not None else None
    nested = data.get("config_paths") if isinstance(data, Mapping) else None
    if not isinstance(nested, list):
        return False
    return bool({safe_relpath(p) for p in nested if isinstance(p, str)} & defining)


_POLICY_FIELDS = {"base_url": "${policy_base_url}", "model": "${policy_model_name}"}


def check_policy_endpoint(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK312: the policy model must point at the job's endpoint, not a fixed one."""
    view = _view(inputs)
    for instance in _policy_models(view) if view else ():
        for key, expected in _POLICY_FIELDS.items():
            value = instance.shape.fields.get(key)
            if value is None or (isinstance(value, str) and expected in value):
                continue
            path, line = instance.locate(*instance.field_path(key))
            message = f"`{POLICY_MODEL}` `{key}: {value!r}` is hard-coded instead of `{expected}`"
            yield EK312.at(path, message, line=line)


# EK308 / EK309 / EK310 -----------------------------------------------------------------------


def _holds_code(pkg: Package, prefix: str) -> bool:
    return any(e.kind == "file" and e.path.endswith(".py") for e in pkg.files_under(prefix))


def _impl_findings(pkg: Package, instance: Instance) -> Iterator[tuple[Rule, str, str]]:
    """``(rule, message, hint)`` for the directory Gym would run for ``instance``.

    Gym's ``_resolve_server_dir`` takes ``<type>/<impl>`` (the key may hold ``/``) from the
    package when it has an install marker there, else from its install root.
    """
    server_type, impl = instance.shape.server_type or "", instance.shape.impl or ""
    dir_path = f"{server_type}/{impl}"
    entry = pkg.entries.get(dir_path)
    builtin = gym_data().is_builtin(server_type, impl)
    if entry is None or entry.kind != "dir":
        if not builtin:
            message = f"`{instance.name}` runs `{dir_path}/`, which neither the package nor Gym has"
            yield EK308, message, _builtin_hint(server_type, impl) or EK308.fix
        return
    if not any(f"{dir_path}/{m}" in pkg.entries for m in ("requirements.txt", "pyproject.toml")):
        if builtin and _holds_code(pkg, dir_path):
            message = (
                f"`{dir_path}/` has code but no requirements.txt/pyproject.toml: "
                f"Gym runs its built-in `{impl}` instead"
            )
            yield EK309, message, EK309.fix
        return
    shown = instance.shape.fields.get("entrypoint")
    entrypoint = safe_relpath(str(shown))
    found = pkg.entries.get(f"{dir_path}/{entrypoint}") if entrypoint else None
    if found is None or found.kind not in ("file", "symlink"):
        message = f"`{instance.name}`: entrypoint {shown!r} is not a file in `{dir_path}/`"
        yield EK310, message, EK310.fix


def _builtin_hint(server_type: str, impl: str) -> str | None:
    names = sorted(gym_data().builtins.get(server_type, ()))
    close = difflib.get_close_matches(impl, names, n=1, cutoff=0.8)
    return f"did you mean the built-in `{close[0]}`?" if close else None


def check_impl_dirs(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK308/EK309/EK310: the directory Gym resolves (package first, then its built-ins)."""
    view, pkg = _view(inputs), inputs.package
    if view is None or pkg is None:
        return
    for instance in view.servers():
        for rule, message, hint in _impl_findings(pkg, instance):
            key = "entrypoint" if rule is EK310 else None
            path, line = instance.locate(*instance.field_path(*([key] if key else [])))
            yield rule.at(path, message, line=line, hint=hint)


# EK311 / EK315 -------------------------------------------------------------------------------


def _dataset_problems(entry: Any) -> list[str]:
    """Gym's ``DatasetConfig`` / ``BenchmarkDatasetConfig`` rules for one entry."""
    data = gym_data()
    if not isinstance(entry, Mapping):
        return ["is not a mapping"]
    kind = entry.get("type")
    kind = kind if isinstance(kind, str) or kind is None else repr(kind)
    benchmark = kind in data.benchmark_dataset_types
    required = ("name", "type", "jsonl_fpath", *(("prepare_script",) if benchmark else ()))
    problems = [f"`{k}` is required" for k in required if entry.get(k) is None]
    allowed = data.dataset_types | data.benchmark_dataset_types
    if kind is not None and kind not in allowed:
        problems.append(f"`type: {kind!r}` is not one of {sorted(allowed)}")
    repeats = entry.get("num_repeats", 1)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        problems.append(f"`num_repeats: {repeats!r}` must be an integer >= 1")
    license_ = entry.get("license")
    if not benchmark and license_ is not None and license_ not in data.dataset_licenses:
        problems.append(f"`license: {license_!r}` is not in Gym's list")
    elif kind in ("train", "validation") and license_ is None:
        problems.append(f"a {kind} dataset needs a `license`")
    return problems


def _inside_package(value: Any) -> bool:
    return isinstance(value, str) and "${" not in value and safe_relpath(value) is not None


def check_datasets(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK315/EK311: `datasets[]` on any server, as Gym validates it; rows that cannot ship."""
    view = _view(inputs)
    for instance in _own_servers(view):
        datasets = instance.shape.fields.get("datasets")
        if datasets is None:
            continue
        if not isinstance(datasets, list):
            path, line = instance.locate(*instance.field_path("datasets"))
            yield EK315.at(path, f"`{instance.name}`: `datasets` must be a list", line=line)
            continue
        for index, entry in enumerate(datasets):
            path, line = instance.locate(*instance.field_path("datasets", index))
            where = _fmt((instance.name, *instance.field_path("datasets", index)))
            for problem in _dataset_problems(entry):
                yield EK315.at(path, f"`{where}`: {problem}", line=line)
            if isinstance(entry, Mapping) and _inside_package(entry.get("jsonl_fpath")):
                keypath = instance.field_path("datasets", index, "jsonl_fpath")
                fpath, fline = instance.locate(*keypath)
                message = f"`{where}.jsonl_fpath: {entry['jsonl_fpath']}` points inside the package"
                yield EK311.at(fpath, message, line=fline)


# EK316 ---------------------------------------------------------------------------------------


def _include_problem(pkg: Package, value: Any) -> str | None:
    if not isinstance(value, str):
        return f"{value!r} is not a path"
    rel = safe_relpath(value)
    if rel is None:
        return f"{value!r} is absolute or leaves the package; it is not shipped"
    if rel in pkg.entries or rel in builtin_configs():
        return None
    return f"{value!r} is neither in the package nor one of Gym's built-in configs"


def check_includes(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK316: every path in a config's own `config_paths` must resolve where Gym looks."""
    pkg = inputs.package
    for path, doc in (pkg.configs if pkg else {}).items():
        nested = doc.data.get("config_paths") if isinstance(doc.data, Mapping) else None
        if nested is None:
            continue
        if not isinstance(nested, list):
            message = "`config_paths` must be a list of paths (Gym iterates it item by item)"
            yield EK316.at(path, message, line=doc.line_of("config_paths"))
            continue
        for index, value in enumerate(nested):
            problem = _include_problem(pkg, value)
            if problem:
                line = doc.line_of("config_paths", index)
                yield EK316.at(path, f"`config_paths[{index}]`: {problem}", line=line)


# EK317 ---------------------------------------------------------------------------------------


def _ref_name(fields: Mapping[str, Any], key: str, server_type: str) -> str | None:
    ref = fields.get(key)
    ok = isinstance(ref, Mapping) and ref.get("type") == server_type
    return ref.get("name") if ok and isinstance(ref.get("name"), str) else None


def _pairing(view: GymView, agent: Instance) -> tuple[Instance, Instance, Any] | None:
    """``(resources, model, allowed)`` when the agent's resources server restricts adapters."""
    fields = agent.shape.fields
    resources = view.instances.get(_ref_name(fields, "resources_server", _RESOURCES) or "")
    model = view.instances.get(_ref_name(fields, "model_server", _MODELS) or "")
    if resources is None or model is None or resources.shape.server_type != _RESOURCES:
        return None
    allowed = resources.shape.fields.get("allowed_model_types")
    if not allowed or model.shape.server_type != _MODELS:
        return None
    return resources, model, allowed


def check_model_pairings(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK317: Gym's ``raise_on_unsupported_model_pairings``, agent by agent."""
    view = _view(inputs)
    if view is None or view.merged.get("allow_unsupported_pairing"):
        return
    for agent in view.servers(_AGENTS):
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
            message = (
                f"agent `{agent.name}` pairs `{resources.name}` with `{model.name}` "
                f"({model.shape.impl}), but it accepts only: {', '.join(map(str, allowed))}"
            )
            yield EK317.at(path, message, line=line)


# EK313 ---------------------------------------------------------------------------------------


def check_interpolations(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK313: interpolations Gym cannot resolve and `???` it reports as missing."""
    view = _view(inputs)
    if view is None or view.incomplete:
        return
    for finding in find_interpolation_problems(view):
        path, line = view.locate(finding.keypath)
        if path in view.builtin:
            continue  # Gym's own config: not the package's to fix
        message = f"`{_fmt(finding.keypath)}`: {finding.message}"
        if not finding.direct:
            message += " (nested: fails when the server reads it)"
        yield EK313.at(path, message, line=line, severity=E if finding.direct else W)


# EK314 ---------------------------------------------------------------------------------------


def _relayed_agents(view: GymView) -> set[str]:
    """Gym's ``environment_server_agent_refs``: typed agent refs, or an untyped `agent_server`."""
    names: set[str] = set()
    for env in view.servers(_ENVS):
        for key, value in env.shape.fields.items():
            if _names_agent(key, value):
                names.add(view.renamed.get(value["name"], value["name"]))
    return names


def _names_agent(key: str, value: Any) -> bool:
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        return False
    return value.get("type") == _AGENTS or (key == "agent_server" and value.get("type") is None)


def _unbound(instance: Instance) -> bool:
    ref = instance.shape.fields.get("resources_server")
    return isinstance(ref, Mapping) and ref.get("name") == "???"


def check_environment_relays(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK314: every agent should be fronted by an `environment_servers` block."""
    view = _view(inputs)
    if view is None or view.incomplete:
        return
    relayed = _relayed_agents(view)
    for agent in _own_servers(view, _AGENTS):
        if agent.name in relayed or _unbound(agent):
            continue
        path, line = agent.locate()
        yield EK314.at(path, f"agent `{agent.name}` has no environment server naming it",
                       line=line)


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
)
