"""``validators/job/cross_field.py``: every cross-field rule runs; one violation never hides
another."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from envkit.model.jobfile import parse_job
from envkit.model.jobspec import GrpoSettings, grpo_settings
from envkit.validators.job.checks import job_diagnostics
from envkit.validators.job.cross_field import RULE_CHECKS

BASE: dict[str, Any] = {
    "model": "default/qwen3-0.6b",
    "dataset": "default/data",
    "environment": "default/env",
    "training": {"type": "grpo", "batch_size": 32, "num_generations_per_prompt": 8},
}


def _codes(**training: Any) -> list[tuple[str, str]]:
    job = {**BASE, "training": {**BASE["training"], **training}}
    doc = parse_job("job.json", json.dumps(job, indent=2).encode())
    return sorted((d.code, d.message.split("`")[1]) for d in job_diagnostics(doc))


def test_gpu_layout_and_rollouts_per_step_are_both_reported():
    # the job: batch 16 / micro 32 is EK613, 3 prompts x 8 = 24 rollouts per step EK605
    found = _codes(batch_size=16, micro_batch_size=32, num_prompts_per_step=3)
    assert ("EK613", "training.batch_size") in found
    assert [c for c, _ in found].count("EK605") == 1


def test_combined_job_defects_all_reported_in_one_run():
    found = {c for c, _ in _codes(
        batch_size=16, micro_batch_size=32, num_prompts_per_step=3,  # EK613 + EK605
        parallelism={"tensor_parallel_size": 2},  # EK613: 1 GPU, model-parallel 2
        vllm_tensor_parallel_size=4,  # EK613: more than a node's GPUs
        lora={"rank": 8},  # EK601: all_weights with a lora block
        truncated_importance_sampling_type="tis",  # EK612: no ratio
        max_steps=3, epochs=2,  # EK603
        router_aux_loss_coef=0.1, hf_config_overrides={"router_aux_loss_coef": 0.2},  # EK606
    )}  # fmt: skip
    assert found == {"EK601", "EK603", "EK605", "EK606", "EK612", "EK613"}


def test_a_refused_field_does_not_hide_a_cross_field_violation():
    # temperature 0 (EK604) and a wrong type (EK609) stop the typed model; the layout rules
    # still run on the other fields
    found = _codes(temperature=0, keep_top_k="many", batch_size=16, micro_batch_size=32)
    codes = [c for c, _ in found]
    assert "EK604" in codes and "EK609" in codes and ("EK613", "training.batch_size") in found


def test_rules_that_read_a_refused_field_are_skipped():
    # batch_size is unreadable: EK605/EK613 would be verdicts on its default, not on the job
    found = _codes(batch_size="sixteen", micro_batch_size=3)
    assert [c for c, _ in found] == ["EK609"]


def test_leave_one_out_needs_two_generations():
    found = _codes(num_generations_per_prompt=1, batch_size=4)
    assert found == [("EK612", "training.num_generations_per_prompt")]


class _Recorder:
    """A ``GrpoSettings`` stand-in that records which top-level fields a rule reads."""

    def __init__(self, settings: GrpoSettings) -> None:
        self._settings, self.seen = settings, set()

    def __getattr__(self, name: str) -> Any:
        self.seen.add(name)
        return getattr(self._settings, name)


_VARIANTS = [
    {},
    {"finetuning_type": "lora", "lora": {"use_triton": True}, "policy_backend": "dtensor",
     "parallelism": {"tensor_parallel_size": 2, "expert_parallel_size": 2,
                     "context_parallel_size": 2, "sequence_parallel": True},
     "automodel_kwargs": {"x": 1}, "batching_strategy": "sequence_packing"},
    {"truncated_importance_sampling_type": "icepop", "truncated_importance_sampling_ratio": 2.0,
     "truncated_importance_sampling_ratio_min": 3.0, "use_importance_sampling_correction": False,
     "reward_shaping": {"overlong_buffer_length": 8}, "reward_scaling": {"source_min": 2.0},
     "min_learning_rate": 1.0, "advantage_clip_low": 1.0, "advantage_clip_high": 0.5,
     "max_new_tokens": 4096, "train_mb_tokens": 16, "batch_multiplier": 2.0,
     "vllm_tensor_parallel_size": 2, "num_prompts_per_step": 3},
    {"truncated_importance_sampling_ratio": 2.0, "router_aux_loss_coef": 0.1,
     "hf_config_overrides": {"router_aux_loss_coef": 0.1}, "num_generations_per_prompt": 1},
]  # fmt: skip


@pytest.mark.parametrize("rule", RULE_CHECKS, ids=[r.check.__name__ for r in RULE_CHECKS])
def test_each_rule_declares_every_field_it_reads(rule):
    derived = {"prompts_per_step": {"batch_size", "num_prompts_per_step",
                                    "num_generations_per_prompt"}}
    for variant in _VARIANTS:
        recorder = _Recorder(grpo_settings({"training": {"type": "grpo", **variant}}))
        list(rule.check(recorder))  # type: ignore[arg-type]
        seen = set().union(set(), *(derived.get(n, {n}) for n in recorder.seen))
        fields = {f.name for f in dataclasses.fields(GrpoSettings)}
        assert seen & fields <= rule.reads, (rule.check.__name__, variant)
