"""Every JSON output's ``TypedDict`` says what its schema says: the same keys, the same required
keys and the same version, nested shapes included (``envkit schema NAME`` and the type a
renderer builds cannot drift apart)."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from envkit.model.provenance import ProvenanceDict
from envkit.output.prefetch import PrefetchDict
from envkit.output.shapes import (
    CompiledConfigDict,
    ConvertDict,
    ErrorDict,
    InitDict,
    RolloutDict,
    RulesDict,
    SettingsDict,
    TrainDict,
)
from envkit.platform.outcomes import (
    JobLogsDict,
    JobMetricsDict,
    JobReplyDict,
    JobShowDict,
    SubmitDict,
)
from envkit.probe.report import ProbeDict
from envkit.profile.report import ProfileDict
from envkit.rescore.report import RescoreDict
from envkit.schemas import SCHEMAS, load_schema
from envkit.smoke.report import SmokeDict
from envkit.validate.report import ReportDict

SHAPES: dict[type, str] = {
    ReportDict: "diagnostics", ConvertDict: "convert", ErrorDict: "error", InitDict: "init",
    RolloutDict: "rollout", TrainDict: "train", CompiledConfigDict: "train-config",
    RulesDict: "rules", SettingsDict: "settings", SmokeDict: "smoke", ProbeDict: "probe",
    SubmitDict: "submit",
    JobReplyDict: "job-output", JobMetricsDict: "job-output", JobLogsDict: "job-output",
    JobShowDict: "job-output", ProvenanceDict: "provenance", PrefetchDict: "prefetch",
    RescoreDict: "rescore", ProfileDict: "profile",
}
"""Each JSON output's shape and the schema it follows."""

INPUTS = {"manifest", "job"}
"""Schemas of what envkit reads, not of what it prints."""

SHARED = {"job-output"}
"""One schema for several shapes (``job status`` / ``metrics`` / ``logs``): each shape has some
of its keys."""


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _typed_dict(annotation: Any) -> tuple[type | None, bool]:
    """The TypedDict inside ``X``, ``X | None`` or ``list[X]``; and whether it is a list."""
    if is_typeddict(annotation):
        return annotation, False
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (types.UnionType, typing.Union) and len(args) == 1:
        return _typed_dict(args[0])
    if get_origin(annotation) is list and args and is_typeddict(args[0]):
        return args[0], True
    return None, False


def _mismatches(shape: type, node: dict[str, Any], root: dict[str, Any], where: str,
                *, partial: bool = False) -> list[str]:
    node = _resolve(node, root)
    props = node.get("properties")
    if props is None:  # the schema leaves this object open
        return []
    hints = get_type_hints(shape)
    found = []
    keys, required = set(hints), set(shape.__required_keys__)
    if partial:
        if not keys <= set(props):
            found.append(f"{where}: keys {sorted(keys - set(props))} not in the schema")
        if not set(node.get("required", ())) <= required:
            found.append(f"{where}: the schema requires {sorted(node['required'])}")
    else:
        if keys != set(props):
            found.append(f"{where}: keys {sorted(keys ^ set(props))} differ from the schema")
        if required != set(node.get("required", ())):
            found.append(f"{where}: required {sorted(required ^ set(node.get('required', ())))}"
                         " differ")
    for key in keys & set(props):
        inner, is_list = _typed_dict(hints[key])
        if inner is None:
            continue
        child = _resolve(props[key], root)
        child = _resolve(child.get("items", {}), root) if is_list else child
        found += _mismatches(inner, child, root, f"{where}.{key}")
    return found


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.__name__)
def test_each_shape_has_its_schemas_keys(shape: type) -> None:
    schema = load_schema(SHAPES[shape])
    assert not _mismatches(shape, schema, schema, shape.__name__,
                           partial=SHAPES[shape] in SHARED)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.__name__)
def test_each_shape_is_versioned_as_its_schema(shape: type) -> None:
    version = get_type_hints(shape)["version"]
    assert get_origin(version) is Literal
    assert get_args(version) == (load_schema(SHAPES[shape])["properties"]["version"]["const"],)


def test_every_output_schema_has_a_shape() -> None:
    assert set(SCHEMAS) - INPUTS == set(SHAPES.values())
