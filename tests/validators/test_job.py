"""EK600–EK611, the job JSON Schema and ``envkit.model.jobspec``: boundaries and seed examples."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.jobfile import parse_job
from envkit.model.jobspec import GrpoSettings, JobSpecError, LoraSettings, grpo_settings, job_schema
from envkit.schemas import load_schema
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions
from envkit.validators.job.checks import is_local_ref, is_workspace_ref, job_diagnostics

# Seed 001 "Submit the job" (full weights).
SEED_FULL_WEIGHT: dict[str, Any] = {
    "model": "default/qwen3-0.6b",
    "dataset": "default/ascii-tree-env-dataset",
    "environment": "default/ascii-tree-env",
    "training": {
        "type": "grpo",
        "epochs": 1,
        "learning_rate": 1e-6,
        "max_seq_length": 2048,
        "batch_size": 32,
        "micro_batch_size": 1,
        "num_generations_per_prompt": 8,
        "temperature": 1.0,
        "parallelism": {"num_nodes": 1, "num_gpus_per_node": 1},
    },
    "output": {"name": "qwen3-0.6b-ascii-tree"},
}

# Seed 001 "Train an adapter instead of full weights".
SEED_LORA: dict[str, Any] = {
    "model": "default/qwen3-0.6b",
    "dataset": "default/ascii-tree-env-dataset",
    "environment": "default/ascii-tree-env",
    "training": {
        "type": "grpo",
        "finetuning_type": "lora",
        "lora": {"rank": 16, "alpha": 32, "dropout": 0.0},
        "epochs": 1,
        "batch_size": 32,
        "num_generations_per_prompt": 8,
    },
    "output": {"name": "qwen3-0.6b-ascii-tree"},
}

FIXTURE_LORA_DEFAULT = (
    REPO_ROOT
    / "fixtures"
    / "packages"
    / "valid-job-grpo-lora"
    / "job.json"
)


def seed_000_lora_default() -> dict[str, Any]:
    """Seed 000's LoRA default job as printed: it also sets ``max_steps: 200``."""
    job = json.loads(FIXTURE_LORA_DEFAULT.read_text())
    job["training"]["max_steps"] = 200
    return job


def check(job: Any, *, allow_local_refs: bool = False) -> list[Diagnostic]:
    raw = job if isinstance(job, bytes) else json.dumps(job, indent=2).encode()
    return list(job_diagnostics(parse_job("job.json", raw), allow_local_refs=allow_local_refs))


def with_training(**changes: Any) -> dict[str, Any]:
    job = copy.deepcopy(SEED_FULL_WEIGHT)
    for key, value in changes.items():
        if value is ...:
            job["training"].pop(key, None)
        else:
            job["training"][key] = value
    return job


def found(job: Any, **kwargs: Any) -> list[tuple[str, Severity]]:
    return [(d.code, d.severity) for d in check(job, **kwargs)]


E, W = Severity.ERROR, Severity.WARNING


# -- the seed examples -------------------------------------------------------------------------


@pytest.mark.parametrize("job", [SEED_FULL_WEIGHT, SEED_LORA], ids=["full-weight", "lora"])
def test_seed_001_examples_are_clean(job: dict[str, Any]) -> None:
    assert check(job) == []


def test_seed_000_lora_default_only_trips_its_own_max_steps_gotcha() -> None:
    """The seed's LoRA default sets ``epochs`` and ``max_steps``; its gotchas say never both."""
    assert found(seed_000_lora_default()) == [("EK603", W)]


# -- EK600 .. EK607 ----------------------------------------------------------------------------


def test_ek600_missing_type_with_line() -> None:
    [diag] = check(with_training(type=...))
    assert diag.code == "EK600"
    assert diag.line == 5  # the `"training": {` line
    assert "union_tag_not_found" in diag.message


def test_dpo_type_is_a_type_error_not_ek600() -> None:
    assert found(with_training(type="dpo")) == [("EK609", E)]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"lora": {"rank": 8}}, [("EK601", E)]),  # finetuning_type unset = all_weights
        ({"finetuning_type": "all_weights", "lora": {"rank": 8}}, [("EK601", E)]),
        ({"finetuning_type": "lora_merged"}, [("EK601", E)]),
        ({"finetuning_type": "lora"}, []),  # lora block omitted: defaults filled in
        ({"finetuning_type": "all_weights"}, []),
    ],
)
def test_ek601_lora(changes: dict[str, Any], expected: list[Any]) -> None:
    assert found(with_training(**changes)) == expected


@pytest.mark.parametrize(
    ("use_triton", "tp", "expected"),
    [
        (True, 2, [("EK602", E)]),
        (True, 1, [("EK602", W)]),
        (True, None, [("EK602", W)]),
        (False, 4, [("EK602", W)]),
        (..., 4, []),
    ],
)
def test_ek602_use_triton(use_triton: Any, tp: int | None, expected: list[Any]) -> None:
    lora: dict[str, Any] = {"rank": 16} if use_triton is ... else {"use_triton": use_triton}
    parallelism = (
        {"num_nodes": 1} if tp is None else {"tensor_parallel_size": tp, "num_gpus_per_node": tp}
    )
    job = with_training(finetuning_type="lora", lora=lora, parallelism=parallelism)
    assert found(job) == expected


def test_ek603_max_steps_alone_is_fine() -> None:
    assert found(with_training(max_steps=10)) == [("EK603", W)]
    assert found(with_training(max_steps=10, epochs=...)) == []


@pytest.mark.parametrize(
    ("temperature", "expected"),
    [
        (0, [("EK604", E)]),
        (0.0, [("EK604", E)]),
        (-0.5, [("EK604", E)]),
        (1e-9, []),
        (float("nan"), [("EK604", E)]),
        (1.0, []),
        (True, [("EK609", W)]),  # the platform reads true as 1.0: converted, a warning
        ("1.0", [("EK609", W)]),
        ("hot", [("EK609", E)]),
        (2.5, [("EK609", E)]),  # the platform caps temperature at 2
    ],
)
def test_ek604_temperature_boundary(temperature: Any, expected: list[Any]) -> None:
    assert found(with_training(temperature=temperature)) == expected


def test_ek604_line_number() -> None:
    [diag] = check(with_training(temperature=0))
    job = parse_job("job.json", json.dumps(with_training(temperature=0), indent=2).encode())
    assert diag.line == job.line_of("training", "temperature") == 13


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"batch_size": 32, "num_generations_per_prompt": 8}, []),
        ({"batch_size": 30, "num_generations_per_prompt": 8}, [("EK605", E)]),
        ({"batch_size": 8, "num_generations_per_prompt": 8}, []),
        ({"batch_size": 12, "num_generations_per_prompt": ...}, [("EK605", E)]),  # default 8
        ({"batch_size": 16, "num_generations_per_prompt": ...}, []),
        ({"batch_size": 512, "num_generations_per_prompt": 16, "num_prompts_per_step": 32}, []),
        (
            {"batch_size": 512, "num_generations_per_prompt": 16, "num_prompts_per_step": 30},
            [("EK605", E)],
        ),
        ({"batch_size": 0, "num_generations_per_prompt": 8}, [("EK609", E)]),
    ],
)
def test_ek605_batch_arithmetic(changes: dict[str, Any], expected: list[Any]) -> None:
    assert found(with_training(**changes)) == expected


def test_ek605_hint_names_the_derived_value() -> None:
    job = with_training(batch_size=512, num_generations_per_prompt=16, num_prompts_per_step=30)
    [diag] = check(job)
    assert diag.code == "EK605"
    assert "30 prompts x 16 generations = 480 rollouts" in diag.message


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"router_aux_loss_coef": 0.0, "hf_config_overrides": {"router_aux_loss_coef": 0.0}},
            [("EK606", E)],
        ),
        (
            {
                "router_aux_loss_coef": 0.0,
                "hf_config_overrides": {"text_config": {"router_aux_loss_coef": 0.0}},
            },
            [],
        ),
        ({"hf_config_overrides": {"router_aux_loss_coef": 0.0}}, []),
        ({"router_aux_loss_coef": 0.0}, []),
    ],
)
def test_ek606_router_coef(changes: dict[str, Any], expected: list[Any]) -> None:
    assert found(with_training(**changes)) == expected


def test_ek607_reports_every_conflict_at_once() -> None:
    job = with_training(
        policy_backend="dtensor",
        finetuning_type="lora",
        automodel_kwargs={"force_hf": True},
        parallelism={"expert_parallel_size": 2, "num_gpus_per_node": 2},
    )
    diags = check(job)
    assert [d.code for d in diags] == ["EK607"] * 3
    assert len({d.line for d in diags}) == 3


@pytest.mark.parametrize(
    "changes",
    [
        {"policy_backend": "dtensor", "parallelism": {"expert_parallel_size": 1}},
        {"policy_backend": "automodel", "finetuning_type": "lora", "automodel_kwargs": {}},
        {"policy_backend": "dtensor"},
    ],
)
def test_ek607_allowed(changes: dict[str, Any]) -> None:
    assert check(with_training(**changes)) == []


# -- EK608: references -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("default/qwen3-0.6b", True),
        ("my-ws/ascii_tree.env", True),
        ("default", False),
        ("a/b/c", False),
        ("/abs/path", False),
        ("./pkg", False),
        ("default/ name", False),
        ("", False),
        (None, False),
        ({"workspace": "default", "name": "x"}, False),
    ],
)
def test_is_workspace_ref(value: Any, ok: bool) -> None:
    assert is_workspace_ref(value) is ok


@pytest.mark.parametrize("key", ["model", "dataset", "environment"])
def test_ek608_each_ref(key: str) -> None:
    job = copy.deepcopy(SEED_FULL_WEIGHT)
    job[key] = "./local/" + key
    assert found(job) == [("EK608", E)]
    assert check(job, allow_local_refs=True) == []
    del job[key]
    assert found(job) == [("EK608", E)]
    assert found(job, allow_local_refs=True) == [("EK608", E)]  # missing stays an error


def test_local_refs_need_a_non_empty_string() -> None:
    assert is_local_ref("/data/pkg")
    assert not is_local_ref("  ")
    assert not is_local_ref(["pkg"])


def test_allow_local_refs_through_validate(tmp_path: Path) -> None:
    job = copy.deepcopy(SEED_FULL_WEIGHT)
    job["environment"] = str(tmp_path / "pkg")
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    strict = validate(ValidateRequest(job=path))
    local = validate(ValidateRequest(job=path, options=CheckOptions(allow_local_refs=True)))
    assert [d.code for d in strict.diagnostics] == ["EK608"]
    assert local.diagnostics == ()


# -- EK609 .. EK611: schema level --------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"learning_rate": "1e-6"}, "training.learning_rate"),
        ({"epochs": 0}, "training.epochs"),
        ({"epochs": 1.5}, "training.epochs"),
        ({"policy_backend": "fsdp"}, "training.policy_backend"),
        ({"batching_strategy": "packed"}, "training.batching_strategy"),
        ({"lora": {"rank": "16"}, "finetuning_type": "lora"}, "training.lora.rank"),
        ({"parallelism": {"num_nodes": 0}}, "training.parallelism.num_nodes"),
        ({"vllm_gpu_memory_utilization": 1.5}, "training.vllm_gpu_memory_utilization"),
    ],
)
def test_ek609_types_and_ranges(changes: dict[str, Any], where: str) -> None:
    [diag] = check(with_training(**changes))
    assert diag.code == "EK609"
    assert diag.message.startswith(f"`{where}`")


def test_ek609_training_not_an_object() -> None:
    job = copy.deepcopy(SEED_FULL_WEIGHT)
    job["training"] = []
    assert found(job) == [("EK609", E)]


def test_ek610_unknown_field_did_you_mean() -> None:
    [diag] = check(with_training(num_generation_per_prompt=8))
    assert (diag.code, diag.severity) == ("EK610", E)  # the platform forbids extra keys
    assert diag.hint == "Did you mean `training.num_generations_per_prompt`?"


def test_ek610_automodel_blocks_at_top_level() -> None:
    job = copy.deepcopy(SEED_FULL_WEIGHT)
    job["schedule"] = {"epochs": 1}
    [diag] = check(job)
    assert diag.code == "EK610"
    assert "`schedule`" in diag.message


def test_ek610_free_form_blocks_are_not_checked() -> None:
    job = with_training(
        hf_config_overrides={"anything": {"nested": 1}},
        automodel_kwargs={"x": 1},
        policy_backend="automodel",
    )
    assert check(job) == []


def test_ek611_invalid_json_has_its_line() -> None:
    [diag] = check(b'{\n  "model": "default/x",\n  "training": {"type": "grpo",}\n}\n')
    assert (diag.code, diag.line) == ("EK611", 3)


@pytest.mark.parametrize(
    "raw", [b"[]", b'"job"', b"\xff\xfe", b'{"training": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"]
)
def test_ek611_not_an_object(raw: bytes) -> None:
    assert [d.code for d in check(raw)] == ["EK611"]


# -- the JSON Schema ---------------------------------------------------------------------------


def _schema_errors(job: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(load_schema("job"))
    return [e.message for e in validator.iter_errors(job)]


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(load_schema("job"))


@pytest.mark.parametrize(
    "job",
    [SEED_FULL_WEIGHT, SEED_LORA, seed_000_lora_default()],
    ids=["seed-001-full-weight", "seed-001-lora", "seed-000-lora-default"],
)
def test_schema_accepts_seed_examples(job: dict[str, Any]) -> None:
    assert _schema_errors(job) == []


@pytest.mark.parametrize(
    "changes",
    [
        {"type": ...},
        {"finetuning_type": "lora_merged"},
        {"temperature": 0},
        {"top_p": 0.9},  # not a field: the platform forbids extra keys
        {"lora": {"rank": 0}, "finetuning_type": "lora"},
        {"num_generations_per_prompt": "8"},  # the schema is strict; the validator converts
    ],
)
def test_schema_rejects_bad_jobs(changes: dict[str, Any]) -> None:
    assert _schema_errors(with_training(**changes))


def test_schema_rejects_object_refs() -> None:
    job = copy.deepcopy(SEED_FULL_WEIGHT)
    job["dataset"] = {"training": "default/x"}
    assert _schema_errors(job)


def test_schema_command_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "job"]) == 0
    assert json.loads(capsys.readouterr().out) == load_schema("job")


def test_every_schema_training_field_is_in_jobspec() -> None:
    fields = set(load_schema("job")["properties"]["training"]["properties"])
    assert fields <= set(GrpoSettings.__dataclass_fields__)


# -- envkit.model.jobspec --------------------------------------------------------------


def test_grpo_settings_defaults_from_the_seeds() -> None:
    settings = grpo_settings({"training": {"type": "grpo"}})
    assert settings.num_generations_per_prompt == 8
    assert settings.temperature == 1.0
    assert settings.finetuning_type == "all_weights"
    assert settings.policy_backend is None
    assert settings.backend == "dtensor"  # all_weights; lora gets automodel
    assert (settings.learning_rate, settings.adam_eps, settings.ratio_clip_max) == (
        1e-4,
        1e-5,
        0.28,
    )
    assert settings.use_importance_sampling_correction is True
    assert settings.val_at_end is True
    assert settings.batching_strategy == "dynamic"
    assert settings.sequence_length_round == 64
    assert settings.lora is None


def test_grpo_settings_reads_the_lora_default_job() -> None:
    settings = grpo_settings(json.loads(FIXTURE_LORA_DEFAULT.read_text()))
    assert settings.lora == LoraSettings(rank=128, alpha=256, dropout=0.0)
    assert settings.parallelism.num_gpus_per_node == 8
    assert settings.prompts_per_step == 32
    assert settings.mb_tokens == 3072  # max_seq_length x micro_batch_size


def test_grpo_settings_derived_values() -> None:
    training = {"type": "grpo", "batch_size": 64, "num_generations_per_prompt": 16}
    assert grpo_settings({"training": training}).prompts_per_step == 4
    lora = grpo_settings({"training": {"type": "grpo", "finetuning_type": "lora"}})
    assert lora.lora == LoraSettings()
    assert lora.backend == "automodel"
    odd = {"type": "grpo", "batch_size": 32, "num_generations_per_prompt": 5}
    assert grpo_settings({"training": odd}).prompts_per_step == 6  # max(32 // 5, 1)


def test_grpo_settings_refuses_unknown_fields() -> None:
    with pytest.raises(JobSpecError, match=r"`training\.future_knob`"):
        grpo_settings({"training": {"type": "grpo", "future_knob": 3}})


@pytest.mark.parametrize(
    ("training", "where"),
    [
        ({"temperature": "hot"}, "training.temperature"),
        ({"batch_size": "many"}, "training.batch_size"),
        ({"lora": {"rank": 1.5}}, "training.lora.rank"),
        ({"lora": {"target_modules": [1]}}, "training.lora.target_modules"),
        ({"policy_backend": "fsdp"}, "training.policy_backend"),
        ({"parallelism": []}, "training.parallelism"),
    ],
)
def test_grpo_settings_type_errors_name_the_key(training: dict[str, Any], where: str) -> None:
    with pytest.raises(JobSpecError, match=f"`{where}`"):
        grpo_settings({"training": {"type": "grpo", **training}})


def test_grpo_settings_needs_training() -> None:
    with pytest.raises(JobSpecError):
        grpo_settings({"model": "default/x"})


def test_schema_file_is_generated_from_the_model() -> None:
    """`envkit/schemas/job.schema.json` is `envkit.model.jobspec.job_schema()` written out with
    `json.dumps(..., indent=2)`: regenerate it after changing the model."""
    assert load_schema("job") == json.loads(json.dumps(job_schema()))
    training = load_schema("job")["properties"]["training"]
    assert training["additionalProperties"] is False
    assert set(training["properties"]) == set(GrpoSettings.__dataclass_fields__)


def test_every_training_field_is_in_the_docs_table() -> None:
    text = (REPO_ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    table = text[text.index("## Job fields") :]
    table = table[: table.index("\n## ")]
    missing = [name for name in GrpoSettings.__dataclass_fields__ if f"`{name}" not in table]
    assert missing == []


@pytest.mark.parametrize(
    ("changes", "code", "where"),
    [
        ({"truncated_importance_sampling_type": "icepop",
          "truncated_importance_sampling_ratio": 5.0}, "EK612",
         "training.truncated_importance_sampling_ratio_min"),
        ({"batch_multiplier": 2.0}, "EK612", "training.batch_multiplier"),
        ({"min_learning_rate": 1.0}, "EK612", "training.min_learning_rate"),
        ({"reward_shaping": {"overlong_buffer_length": 8}}, "EK612", "training.reward_shaping"),
        ({"parallelism": {"tensor_parallel_size": 2}}, "EK613", "training.parallelism"),
        ({"micro_batch_size": 3}, "EK613", "training.batch_size"),
        ({"top_p": 0.9}, "EK610", "training.top_p"),
    ],
)  # fmt: skip
def test_platform_rules_have_codes_and_paths(
    changes: dict[str, Any], code: str, where: str
) -> None:
    [diag] = check(with_training(**changes))
    assert (diag.code, diag.severity) == (code, E)
    assert f"`{where}`" in diag.message


def test_values_the_platform_converts_are_warnings() -> None:
    [diag] = check(with_training(batch_size="32", normalize_rewards="yes"))[:1]
    assert (diag.code, diag.severity) == ("EK609", W)
    assert "reads it as" in diag.message
