"""The EK6xx rule records of the GRPO job: code, severity, title, why, fix."""

from __future__ import annotations

from envkit.model.diagnostics import Severity
from envkit.validators._base import Rule

__all__ = [
    "EK600", "EK601", "EK602", "EK603", "EK604", "EK605", "EK606", "EK607", "EK608", "EK609",
    "EK610", "EK611", "EK612", "EK613", "RULES",
]

EK600 = Rule(
    "EK600", Severity.ERROR, "GRPO job: `training.type` missing",
    "`training.type` is the union discriminator and is required: omitting it fails at submit "
    "with `union_tag_not_found` rather than defaulting (the NeMo Customizer guide; the \"GRPO "
    "and Reward Environments\" guide).",
    'Set `"type": "grpo"` in the `training` block.',
)
EK601 = Rule(
    "EK601", Severity.ERROR,
    "`lora` block with `finetuning_type: all_weights`; `lora_merged` requested",
    "The schema rejects a `lora` block unless `finetuning_type` is `lora` (`all_weights` is the "
    "default), and rejects `lora_merged` outright: GRPO does not merge adapters at export.",
    'Set `"finetuning_type": "lora"` to train an adapter, or drop `lora` for full weights.',
)
EK602 = Rule(
    "EK602", Severity.ERROR,
    "`lora.use_triton: true` with `tensor_parallel_size > 1` (warn when set)",
    "The compiler picks Triton LoRA kernels itself (true at TP 1, false above). An explicit "
    "`true` with tensor parallelism is rejected at submit: the kernels cannot take the sharded "
    "adapter weights. The seeds say to leave it unset.",
    "Remove `training.lora.use_triton`.",
    when=((Severity.ERROR, "when it is `true` with `tensor_parallel_size > 1`: submit rejects it"),
          (Severity.WARNING, "when it is set otherwise: the compiler picks the kernels itself")),
)
EK603 = Rule(
    "EK603", Severity.WARNING, "`max_steps` together with `epochs`",
    "`max_steps` is a global cap that stops mid-epoch; it sits in smoke-test fixtures so they "
    "finish in a minute and is the most-copied wrong value (the NeMo Customizer guide).",
    "Drop `training.max_steps` for real runs and size the run with `epochs`.",
)
EK604 = Rule(
    "EK604", Severity.ERROR, "`temperature <= 0`",
    "Greedy sampling makes every response in a group identical, so every advantage is zero "
    "and the run is a no-op (the \"GRPO and Reward Environments\" guide: must be greater than 0).",
    "Use `temperature` > 0; 1.0 is the default.",
)
EK605 = Rule(
    "EK605", Severity.ERROR, "rollouts per step not a multiple of `batch_size`",
    "A GRPO step generates `num_prompts_per_step x num_generations_per_prompt` rollouts and "
    "trains on them in optimizer steps of `batch_size`; `num_prompts_per_step` defaults to "
    "`max(batch_size // num_generations_per_prompt, 1)`, so a group size that does not divide "
    "`batch_size` leaves a remainder the platform rejects before compiling.",
    "Pick `batch_size` as a multiple of `num_generations_per_prompt` (default 8), or set "
    "`num_prompts_per_step` so the product is a multiple of `batch_size`.",
)
EK606 = Rule(
    "EK606", Severity.ERROR, "`router_aux_loss_coef` both top level and in `hf_config_overrides`",
    "Both write the same top-level HF config key, so the job is rejected (the \"GRPO and Reward "
    "Environments\" guide).",
    "Keep one: `hf_config_overrides` when the model nests the key (Qwen3.5: under `text_config`).",
)
EK607 = Rule(
    "EK607", Severity.ERROR, "`policy_backend: dtensor` with an automodel-only feature",
    "`dtensor` runs stock HF modules on FSDP2 for pre-Hopper GPUs and supports none of LoRA, "
    "`expert_parallel_size` above 1, or `automodel_kwargs`; submit rejects each (the \"GRPO and "
    "Reward Environments\" guide).",
    "Use `policy_backend: automodel` (Hopper or newer), or drop the automodel-only feature.",
)
EK608 = Rule(
    "EK608", Severity.ERROR, "`model`/`dataset`/`environment` not `workspace/name` strings",
    "GRPO takes three plain string references `workspace/name`, not objects (the NeMo "
    "Customizer guide, 'String refs'); the environment and dataset are two separate FileSets.",
    'Use strings such as `"environment": "default/my-env"`.',
)
EK609 = Rule(
    "EK609", Severity.ERROR,
    "job field has the wrong type or is out of range (warn when converted)",
    "The platform validates the job against its model at submit; a wrong type or an "
    "out-of-range value fails there. A number or boolean written as a string is converted "
    "there, so it is a warning here. Types and ranges: `envkit schema job`.",
    "Fix the value to the type and range `envkit schema job` gives for the field.",
    when=((Severity.ERROR, "when the platform refuses the value"),
          (Severity.WARNING, "when the platform converts it (a number or boolean as a string)")),
)
EK610 = Rule(
    "EK610", Severity.ERROR, "unknown job field",
    "The platform's job model forbids keys it does not define: a typo or a field from another "
    "backend (automodel's `schedule`/`batch` blocks, `top_p`) fails submit.",
    "Check the spelling against `envkit schema job` / `nemo customization rl explain`.",
)
EK611 = Rule(
    "EK611", Severity.ERROR, "job file is not a JSON object",
    "Submit parses the file as one JSON object.",
    "Write the job as one JSON object (UTF-8).",
)

EK612 = Rule(
    "EK612", Severity.ERROR, "training fields that conflict",
    "The platform's job model rejects pairs of fields that NeMo-RL would assert against after "
    "the GPUs are claimed, or that would silently do nothing: truncated IS without its ratios, "
    "incomplete reward shaping, reversed ranges, `batch_multiplier` without dynamic sampling, "
    "`max_new_tokens` above `max_seq_length`, and the like.",
    "Make the fields agree as the message says.",
)
EK613 = Rule(
    "EK613", Severity.ERROR, "GPU layout does not divide",
    "Before compiling, the platform checks that the GPUs divide by the model-parallel size, "
    "that `batch_size` divides by `micro_batch_size` x data-parallel size, and that the vLLM "
    "engine's tensor parallel size fits a node.",
    "Adjust `parallelism`, `batch_size` or `micro_batch_size` so the sizes divide.",
)

RULES = (EK600, EK601, EK602, EK603, EK604, EK605, EK606, EK607, EK608, EK609, EK610, EK611,
         EK612, EK613)
