"""EK311, EK313, EK315, EK316: values Gym validates or resolves (datasets, `${...}`, includes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envkit.model.gym_data import gym_data, is_builtin_config
from envkit.model.package import safe_relpath
from envkit.validators.gym.interp import find_interpolation_problems
from envkit.validators.gym.model import own_servers, view_of
from envkit.validators.gym.rules import EK311, EK313, EK315, EK316, E, W
from envkit.validators.gym.shapes import fmt_keypath

if TYPE_CHECKING:
    from collections.abc import Iterator

    from envkit.model.diagnostics import Diagnostic
    from envkit.model.package import Package
    from envkit.validators._base import Inputs

__all__ = ["check_datasets", "check_includes", "check_interpolations"]


def _dataset_problems(entry: Any) -> list[str]:
    """Gym's ``DatasetConfig`` / ``BenchmarkDatasetConfig`` rules for one entry."""
    data = gym_data()
    if not isinstance(entry, dict):
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


def check_datasets(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK315/EK311: `datasets[]` on any server, as Gym validates it; rows that cannot ship."""
    view = view_of(inputs.package)
    for instance in own_servers(view):
        datasets = instance.shape.fields.get("datasets")
        if datasets is None:
            continue
        if not isinstance(datasets, list):
            path, line = instance.locate(*instance.field_path("datasets"))
            yield EK315.at(path, f"`{instance.name}`: `datasets` must be a list", line=line)
            continue
        for index, entry in enumerate(datasets):
            path, line = instance.locate(*instance.field_path("datasets", index))
            where = fmt_keypath((instance.name, *instance.field_path("datasets", index)))
            for problem in _dataset_problems(entry):
                yield EK315.at(path, f"`{where}`: {problem}", line=line)
            rows = entry.get("jsonl_fpath") if isinstance(entry, dict) else None
            if isinstance(rows, str) and "${" not in rows and safe_relpath(rows) is not None:
                keypath = instance.field_path("datasets", index, "jsonl_fpath")
                fpath, fline = instance.locate(*keypath)
                message = f"`{where}.jsonl_fpath: {rows}` points inside the package"
                yield EK311.at(fpath, message, line=fline)


def check_interpolations(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK313: interpolations Gym cannot resolve and `???` it reports as missing."""
    view = view_of(inputs.package)
    if view is None or view.incomplete:
        return
    for finding in find_interpolation_problems(view):
        path, line = view.locate(finding.keypath)
        if path in view.builtin:
            continue  # Gym's own config: not the package's to fix
        message = f"`{fmt_keypath(finding.keypath)}`: {finding.message}"
        if not finding.direct:
            message += " (nested: fails when the server reads it)"
        yield EK313.at(path, message, line=line, severity=E if finding.direct else W)


def _include_problem(pkg: Package, value: str) -> str | None:
    rel = safe_relpath(value)
    if rel is None:
        return f"{value!r} is absolute or leaves the package; it is not shipped"
    if rel in pkg.entries or is_builtin_config(rel):
        return None
    return f"{value!r} is neither in the package nor one of Gym's built-in configs"


def check_includes(inputs: Inputs) -> Iterator[Diagnostic]:
    """EK316: every path in a config's own `config_paths` must resolve where Gym looks.

    Each distinct path string is judged once: configs that all list each other repeat the
    same N strings N times.
    """
    pkg = inputs.package
    if pkg is None:
        return
    judged: dict[str, str | None] = {}
    for path, doc in pkg.configs.items():
        nested = doc.data.get("config_paths") if isinstance(doc.data, dict) else None
        if nested is None:
            continue
        if not isinstance(nested, list):
            message = "`config_paths` must be a list of paths (Gym iterates it item by item)"
            yield EK316.at(path, message, line=doc.line_of("config_paths"))
            continue
        for index, value in enumerate(nested):
            if not isinstance(value, str):
                problem: str | None = f"{value!r} is not a path"
            elif value in judged:
                problem = judged[value]
            else:
                problem = judged[value] = _include_problem(pkg, value)
            if problem:
                line = doc.line_of("config_paths", index)
                yield EK316.at(path, f"`config_paths[{index}]`: {problem}", line=line)
