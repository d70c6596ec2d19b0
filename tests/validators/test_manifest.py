"""EK1xx: the manifest checks, and proof that they agree with ``manifest.schema.json``."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from support.paths import REPO_ROOT

from envkit.model.package import load_package
from envkit.model.yamlio import parse_yaml
from envkit.schemas import load_schema
from envkit.validators import Inputs
from envkit.validators.manifest import (
    ADAPTER_KEYS,
    CHECKS,
    FORMATS,
    METADATA_KEYS,
    STATIC_CODES,
    TOP_LEVEL_KEYS,
    static_problems,
)

FIXTURES = REPO_ROOT / "fixtures" / "packages"
GOOD = {
    "format": "native-v1",
    "config_paths": ["responses_api_models/vllm_model/configs/policy_model.yaml"],
    "metadata": {"name": "echo"},
}
ADAPTER = {
    "format": "adapter-wheels-v1",
    "config_paths": ["configs/policy_model.yaml"],
    "metadata": {"name": "rt", "vf_env_id": "rt", "hub_id": "o/rt"},
    "adapter": {"agent": "verifiers_agent", "agent_type": "responses_api_agents"},
}


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = {**base, **changes}
    return {k: v for k, v in out.items() if v is not _DROP}


_DROP = object()

# (id, manifest, codes the checks must report) -- the schema must report the same set.
MANIFESTS: list[tuple[str, Any, set[str]]] = [
    ("good-native", GOOD, set()),
    ("good-adapter", ADAPTER, set()),
    ("good-wheels-anywhere", _with(GOOD, format="wheels-v1", config_paths=["x/y.yaml"]), set()),
    # the platform's schema tests the path as written: a leading `./` is outside (0.6.0)
    ("dot-slash-native", _with(GOOD, config_paths=["./resources_servers/a/c.yaml"]), {"EK111"}),
    ("list", [GOOD], {"EK101"}),
    ("null", None, {"EK101"}),
    ("string", "format: native-v1", {"EK101"}),
    ("unknown-top", _with(GOOD, version=1), {"EK102"}),
    ("int-key", {**GOOD, 1: "x"}, {"EK102"}),
    ("unknown-meta", _with(GOOD, metadata={"name": "x", "author": "me"}), {"EK102"}),
    ("unknown-adapter", _with(ADAPTER, adapter={**ADAPTER["adapter"], "image": "x"}), {"EK102"}),
    ("no-format", _with(GOOD, format=_DROP), {"EK103"}),
    ("bad-format", _with(GOOD, format="wheels-v2"), {"EK103"}),
    ("list-format", _with(GOOD, format=["native-v1"]), {"EK103"}),
    ("no-paths", _with(GOOD, config_paths=_DROP), {"EK104"}),
    ("empty-paths", _with(GOOD, config_paths=[]), {"EK104"}),
    ("string-paths", _with(GOOD, config_paths="configs/a.yaml"), {"EK104"}),
    ("int-path", _with(GOOD, config_paths=[3]), {"EK104"}),
    ("empty-path", _with(GOOD, config_paths=[""]), {"EK104"}),
    ("absolute", _with(GOOD, config_paths=["/resources_servers/a.yaml"]), {"EK105"}),
    ("drive", _with(GOOD, format="wheels-v1", config_paths=["C:\\x.yaml"]), {"EK105"}),
    ("dotdot", _with(GOOD, config_paths=["resources_servers/../../a.yaml"]), {"EK105"}),
    ("backslash-dotdot", _with(ADAPTER, config_paths=["configs\\..\\..\\a.yaml"]), {"EK105"}),
    ("no-metadata", _with(GOOD, metadata=_DROP), {"EK108"}),
    ("metadata-list", _with(GOOD, metadata=["x"]), {"EK108"}),
    ("no-name", _with(GOOD, metadata={"description": "d"}), {"EK108"}),
    ("empty-name", _with(GOOD, metadata={"name": ""}), {"EK108"}),
    ("long-name", _with(GOOD, metadata={"name": "n" * 256}), {"EK108"}),
    ("max-name", _with(GOOD, metadata={"name": "n" * 255}), set()),
    ("int-name", _with(GOOD, metadata={"name": 7}), {"EK108"}),
    ("long-desc", _with(GOOD, metadata={"name": "x", "description": "d" * 2049}), {"EK108"}),
    ("max-desc", _with(GOOD, metadata={"name": "x", "description": "d" * 2048}), set()),
    ("adapter-on-wheels", _with(GOOD, format="wheels-v1", adapter={}), {"EK109"}),
    ("adapter-missing", _with(ADAPTER, adapter=_DROP), {"EK109"}),
    ("adapter-string", _with(ADAPTER, adapter="verifiers_agent"), {"EK109"}),
    ("bad-agent", _with(ADAPTER, adapter={"agent": "x", "agent_type": "responses_api_agents"}),
     {"EK110"}),
    ("bad-agent-type", _with(ADAPTER, adapter={"agent": "verifiers_agent",
                                               "agent_type": "responses_api_agent"}), {"EK110"}),
    ("no-agent", _with(ADAPTER, adapter={"agent_type": "responses_api_agents"}), {"EK110"}),
    ("native-outside", _with(GOOD, config_paths=["configs/a.yaml"]), {"EK111"}),
    ("native-env-servers", _with(GOOD, config_paths=["environment_servers/a/c.yaml"]),
     {"EK111"}),
    ("adapter-outside", _with(ADAPTER, config_paths=["agents/a.yaml"]), {"EK112"}),
    ("backslash-is-not-a-separator", _with(ADAPTER, config_paths=["configs\\a.yaml"]),
     {"EK112"}),
    ("dot-slashes", _with(ADAPTER, config_paths=["././configs/a.yaml"]), {"EK112"}),
    ("misplaced-absolute-once", _with(ADAPTER, config_paths=["/configs/a.yaml"]), {"EK105"}),
    ("several", {"format": "native-v1", "config_paths": ["a.yaml", 1], "metadata": {},
                 "adapter": {}, "extra": 1}, {"EK102", "EK104", "EK108", "EK109", "EK111"}),
]


def _fixture_manifests() -> list[tuple[str, Any]]:
    out = []
    for path in sorted(FIXTURES.glob("*/pkg/nemo-environment.yaml")):
        doc = parse_yaml(path.name, path.read_bytes())
        if doc.ok:
            out.append((path.parent.parent.name, doc.data))
    return out


def _schema_codes(data: Any) -> set[str]:
    """Map each JSON Schema error to its rule through the schema's own annotations."""
    codes: set[str] = set()
    for error in Draft202012Validator(load_schema("manifest")).iter_errors(data):
        schema = error.schema if isinstance(error.schema, dict) else {}
        if error.validator == "additionalProperties":
            codes.add("EK102")
        elif error.validator == "required":
            required = schema["x-envkit-required"]
            codes.update(required[k] for k in error.validator_value if k not in error.instance)
        else:
            codes.add(schema["x-envkit-code"])
    return codes


def _check_codes(data: Any) -> set[str]:
    return {d.code for d in static_problems(data)}


def test_schema_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(load_schema("manifest"))


@pytest.mark.parametrize(("data", "expected"), [(m, c) for _, m, c in MANIFESTS],
                         ids=[i for i, _, _ in MANIFESTS])
def test_checks_and_schema_agree(data: Any, expected: set[str]) -> None:
    assert _check_codes(data) == expected
    assert _schema_codes(data) == expected


@pytest.mark.parametrize(("case", "data"), _fixture_manifests(),
                         ids=[c for c, _ in _fixture_manifests()])
def test_checks_and_schema_agree_on_fixtures(case: str, data: Any) -> None:
    assert _schema_codes(data) == _check_codes(data)
    assert _check_codes(data) <= STATIC_CODES


def _run(pkg_dir: Path) -> list:
    inputs = Inputs(package=load_package(pkg_dir))
    return [d for check in CHECKS for d in check(inputs)]


def _package(tmp_path: Path, manifest: str) -> Path:
    pkg = tmp_path / "pkg"
    cfg = pkg / "resources_servers" / "a" / "configs"
    cfg.mkdir(parents=True)
    (cfg / "a.yaml").write_text("a: {}\n")
    (pkg / "nemo-environment.yaml").write_text(manifest)
    return pkg


def test_lines_and_key_paths(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "format: native-v1\nconfig_paths:\n  - resources_servers/a/configs/"
                   "a.yaml\nmetadata:\n  name: x\n  descripton: y\nconfg_paths: []\n")
    found = {(d.code, d.line, d.message, d.hint) for d in _run(pkg)}
    assert ("EK102", 6, "unknown key `metadata.descripton`",
            "Did you mean `metadata.description`?") in found
    assert ("EK102", 7, "unknown key `confg_paths`", "Did you mean `config_paths`?") in found


def test_misplaced_key_points_at_its_block(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "format: native-v1\nconfig_paths: [resources_servers/a/configs/a.yaml]"
                   "\nmetadata: {name: x}\nvf_env_id: x\n")
    (diag,) = _run(pkg)
    assert (diag.code, diag.line, diag.hint) == ("EK102", 4, "Move it to `metadata.vf_env_id`.")


def test_unknown_key_without_near_match_lists_allowed(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "format: native-v1\nconfig_paths: [resources_servers/a/configs/a.yaml]"
                   "\nmetadata: {name: x}\nzzz: 1\n")
    (diag,) = _run(pkg)
    assert "`format`" in diag.hint and "`adapter`" in diag.hint


def test_every_message_is_one_line_with_a_hint() -> None:
    for _, data, _ in MANIFESTS:
        for diag in static_problems(data):
            assert "\n" not in diag.message and diag.hint
            assert "`" in diag.message, diag.message


def test_config_dir_symlinked_outside_is_an_escape(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.yaml").write_text("a: {}\n")
    pkg = _package(tmp_path, "format: wheels-v1\nconfig_paths: [configs/a.yaml, inner/a.yaml]\n"
                   "metadata: {name: x}\n")
    (pkg / "configs").symlink_to(outside)
    (pkg / "inner").symlink_to("resources_servers/a/configs")
    codes = {d.code: d.message for d in _run(pkg)}
    assert set(codes) == {"EK105", "EK107"}
    assert "escapes the package through symlink `configs`" in codes["EK105"]
    assert "goes through symlink `inner`" in codes["EK107"]


def test_backslash_path_is_literal_on_the_cluster(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "format: wheels-v1\nconfig_paths: ['resources_servers\\\\a\\\\configs"
                   "\\\\a.yaml']\nmetadata: {name: x}\n")
    (diag,) = _run(pkg)
    assert diag.code == "EK106" and "Use `/`" in diag.hint


def test_config_path_that_is_a_directory(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "format: native-v1\nconfig_paths: [resources_servers/a/configs]\n"
                   "metadata: {name: x}\n")
    (diag,) = _run(pkg)
    assert diag.code == "EK106" and "is a directory" in diag.message and diag.line == 2


def test_nested_manifest_hint(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "format: native-v1\n")
    outer = tmp_path / "upload"
    outer.mkdir()
    pkg.rename(outer / "my-env")
    (diag,) = _run(outer)
    assert diag.code == "EK100"
    # Seed 001 ("Upload both FileSets"): the trailing slash selects the directory's contents.
    assert "nemo files upload ./my-env/ ..." in diag.hint and "trailing slash" in diag.hint
    assert "my-env/nemo-environment.yaml" in diag.message


def test_yaml_error_line(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "format: native-v1\nmetadata:\n  name: [x\n")
    (diag,) = _run(pkg)
    assert diag.code == "EK101" and diag.line is not None


def test_schema_text_matches_yaml_manifest_of_converter_shape() -> None:
    text = (FIXTURES / "valid-adapter-wheels-v1/pkg/nemo-environment.yaml").read_text()
    assert not list(Draft202012Validator(load_schema("manifest")).iter_errors(yaml.safe_load(text)))


def _random_manifest(rng: random.Random) -> dict[str, Any]:
    atoms = [None, True, 0, 3.5, "", "x", "../a", "a/../b", "/abs", "configs/a.yaml",
             "./configs/a.yaml", "configs\\a", "..\\a", "C:\\x", "resources_servers/a/b.yaml",
             "environment_servers/a.yaml", "verifiers_agent", "responses_api_agents", "n" * 256,
             "d" * 2049, *FORMATS]
    keys = [*TOP_LEVEL_KEYS, *METADATA_KEYS, *ADAPTER_KEYS, "zzz", ""]

    def value(depth: int) -> Any:
        roll = rng.random()
        if depth > 2 or roll < 0.4:
            return rng.choice(atoms)
        if roll < 0.7:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(keys): value(depth + 1) for _ in range(rng.randint(0, 4))}

    def block() -> Any:
        return rng.choice([value(1), {k: rng.choice(atoms) for k in rng.sample(keys, 3)}])

    data = {"format": rng.choice([*FORMATS, "x", None]),
            "config_paths": rng.choice([value(1), [rng.choice(atoms) for _ in range(3)]]),
            "metadata": block(), "adapter": block()}
    return {k: v for k, v in data.items() if rng.random() >= 0.2}


def test_checks_and_schema_agree_on_random_manifests() -> None:
    """Seeded fuzz: 20,000 manifests agreed when this was written; 500 run every time."""
    rng = random.Random(20261129)
    for _ in range(500):
        data = _random_manifest(rng)
        assert _schema_codes(data) == _check_codes(data), data
