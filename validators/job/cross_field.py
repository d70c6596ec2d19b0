"""Cross-field rules of the GRPO job, over the typed job model.

Why typed: the platform runs these rules after reading every field (numbers given as strings
already converted), so they see the same values here. Each rule is the platform's own
(its job model's validators and the GPU-layout check made before compile); each finding names
its registered rule record and the key path it is reported at.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from envkit.validators.job.rules import EK601, EK602, EK605, EK606, EK607, EK612, EK613

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from envkit.model.jobspec import GrpoSettings
    from envkit.validators._base import Rule

__all__ = ["RULE_CHECKS", "CrossFieldRule", "Finding", "findings"]


class Finding(NamedTuple):
    rule: Rule
    path: tuple[str, ...]
    message: str
    warning: bool = False


def _t(*keys: str) -> tuple[str, ...]:
    return ("training", *keys)


def _conflict(message: str, *keys: str) -> Finding:
    """EK612, the rule of most pairs, at ``training.<keys>``."""
    return Finding(EK612, _t(*keys), message)


def _lora(t: GrpoSettings) -> Iterator[Finding]:
    """EK601/EK602: a lora block needs lora; Triton kernels cannot take TP-sharded weights."""
    if t.finetuning_type == "all_weights" and t.lora is not None:
        yield Finding(EK601, _t("lora"),
                      "`training.lora` is given but `finetuning_type` is all_weights (the default)")
    if t.lora is None or t.lora.use_triton is None:
        return
    tp = t.parallelism.tensor_parallel_size
    if t.lora.use_triton and tp > 1:
        yield Finding(EK602, _t("lora", "use_triton"), "`training.lora.use_triton: true` with "
                      f"`tensor_parallel_size` {tp} is rejected at submit")
    else:
        yield Finding(EK602, _t("lora", "use_triton"),
                      "`training.lora.use_triton` is set; leave it unset so the compiler picks",
                      warning=True)


def _backend(t: GrpoSettings) -> Iterator[Finding]:
    """EK607: dtensor supports neither LoRA, expert parallelism nor automodel_kwargs."""
    if t.backend != "dtensor":
        return
    ep = t.parallelism.expert_parallel_size
    if t.finetuning_type == "lora":
        yield Finding(EK607, _t("finetuning_type"), "LoRA needs `policy_backend: automodel`")
    if ep > 1:
        yield Finding(EK607, _t("parallelism", "expert_parallel_size"),
                      f"`expert_parallel_size` {ep} needs `policy_backend: automodel`")
    if t.automodel_kwargs:
        yield Finding(EK607, _t("automodel_kwargs"),
                      "`automodel_kwargs` needs `policy_backend: automodel`")


def _overrides(t: GrpoSettings) -> Iterator[Finding]:
    overrides = t.hf_config_overrides or {}
    if t.router_aux_loss_coef is not None and "router_aux_loss_coef" in overrides:
        yield Finding(EK606, _t("hf_config_overrides", "router_aux_loss_coef"),
                      "`router_aux_loss_coef` is set both on `training` and in "
                      "`hf_config_overrides`")


def _tis(t: GrpoSettings) -> Iterator[Finding]:
    """EK612: the asserts NeMo-RL's clipped PG loss makes about truncated IS at startup."""
    kind = t.truncated_importance_sampling_type
    ratio, low = t.truncated_importance_sampling_ratio, t.truncated_importance_sampling_ratio_min
    if kind is None:
        if ratio is not None or low is not None:
            yield _conflict("the TIS ratios are ignored unless "
                            "`truncated_importance_sampling_type` is set",
                            "truncated_importance_sampling_ratio")
        return
    if not t.use_importance_sampling_correction:
        yield _conflict("truncated importance sampling needs "
                        "`use_importance_sampling_correction`",
                        "use_importance_sampling_correction")
    if ratio is None:
        yield _conflict(f"`truncated_importance_sampling_ratio` is required for {kind!r}",
                        "truncated_importance_sampling_ratio")
    if kind in ("icepop", "seq-mask-tis") and low is None:
        yield _conflict(f"`truncated_importance_sampling_ratio_min` is required for {kind!r}",
                        "truncated_importance_sampling_ratio_min")
    if ratio is not None and low is not None and low > ratio:
        yield _conflict("`truncated_importance_sampling_ratio_min` exceeds the ratio",
                        "truncated_importance_sampling_ratio_min")


def _rewards(t: GrpoSettings) -> Iterator[Finding]:
    """EK612: reward shaping and scaling blocks that would silently do nothing."""
    shaping = t.reward_shaping
    if shaping is not None:
        trio = (shaping.overlong_buffer_length, shaping.overlong_buffer_penalty,
                shaping.max_response_length)
        some, every = any(v is not None for v in trio), all(v is not None for v in trio)
        stop = shaping.stop_properly_penalty_coef is not None
        if (some and not every) or (not some and not stop) or (stop and some):
            yield _conflict("`reward_shaping` takes either the three overlong_* fields together "
                            "or stop_properly_penalty_coef alone", "reward_shaping")
    scaling = t.reward_scaling
    if scaling is not None:
        for low, high in (("source_min", "source_max"), ("target_min", "target_max")):
            if not getattr(scaling, low) < getattr(scaling, high):
                yield _conflict(f"`reward_scaling.{low}` must be below `{high}`",
                                "reward_scaling", low)


def _ranges(t: GrpoSettings) -> Iterator[Finding]:
    """EK612: pairs of fields whose values must be ordered."""
    if t.min_learning_rate is not None and t.min_learning_rate > t.learning_rate:
        yield _conflict("`min_learning_rate` exceeds `learning_rate`", "min_learning_rate")
    low, high = t.advantage_clip_low, t.advantage_clip_high
    if low is not None and high is not None and low >= high:
        yield _conflict(f"`advantage_clip_low` {low} must be below `advantage_clip_high` {high}",
                        "advantage_clip_low")
    if t.max_new_tokens is not None and t.max_new_tokens > t.max_seq_length:
        yield _conflict(f"`max_new_tokens` {t.max_new_tokens} exceeds `max_seq_length` "
                        f"{t.max_seq_length}", "max_new_tokens")
    if t.train_mb_tokens is not None and t.train_mb_tokens < t.max_seq_length:
        yield _conflict(f"`train_mb_tokens` {t.train_mb_tokens} is below `max_seq_length`",
                        "train_mb_tokens")


def _modes(t: GrpoSettings) -> Iterator[Finding]:
    """EK612: feature pairs NeMo-RL asserts against."""
    p = t.parallelism
    if p.context_parallel_size > 1 and p.sequence_parallel and p.tensor_parallel_size > 1:
        yield _conflict("context parallel cannot combine with sequence_parallel under tensor "
                        "parallelism", "parallelism", "sequence_parallel")
    if t.batch_multiplier != 1.0 and not t.use_dynamic_sampling:
        yield _conflict("`batch_multiplier` needs `use_dynamic_sampling: true`",
                        "batch_multiplier")
    if t.batching_strategy == "sequence_packing" and p.context_parallel_size > 1:
        yield _conflict("`sequence_packing` is not supported with context_parallel_size > 1",
                        "batching_strategy")
    if t.use_leave_one_out_baseline and t.num_generations_per_prompt < 2:
        yield _conflict("the leave-one-out baseline needs `num_generations_per_prompt` >= 2",
                        "num_generations_per_prompt")


def _gpu_layout(t: GrpoSettings) -> Iterator[Finding]:
    """EK613: the GPUs divide by the model-parallel size, ``batch_size`` by micro-batch x
    data-parallel size, and the vLLM engine's TP fits a node; each is reported on its own."""
    p = t.parallelism
    gpus = p.num_gpus_per_node * p.num_nodes
    mp = (p.tensor_parallel_size * p.pipeline_parallel_size * p.context_parallel_size
          * p.expert_parallel_size)
    if gpus % mp:
        yield Finding(EK613, _t("parallelism"), f"{gpus} GPUs are not divisible by the "
                      f"model-parallel size {mp} (tp x pp x cp x ep)")
    elif t.batch_size % (divisor := t.micro_batch_size * (gpus // mp)):
        # the data-parallel size is defined only when the model-parallel size divides the GPUs
        yield Finding(EK613, _t("batch_size"), f"`batch_size` {t.batch_size} is not divisible "
                      f"by micro_batch_size x data-parallel size = {divisor}")
    vtp = t.vllm_tensor_parallel_size
    if vtp is not None and (vtp > p.num_gpus_per_node or gpus % vtp):
        yield Finding(EK613, _t("vllm_tensor_parallel_size"),
                      f"`vllm_tensor_parallel_size` {vtp} must divide {gpus} GPUs and fit one node")


def _rollouts_per_step(t: GrpoSettings) -> Iterator[Finding]:
    """EK605: a step's ``prompts x G`` rollouts split into whole optimizer steps of
    ``batch_size``; independent of the GPU layout, so it is reported next to EK613."""
    rollouts = t.prompts_per_step * t.num_generations_per_prompt
    if rollouts % t.batch_size:
        yield Finding(EK605, _t("batch_size"), f"{t.prompts_per_step} prompts x "
                      f"{t.num_generations_per_prompt} generations = {rollouts} rollouts is not "
                      f"a multiple of `batch_size` {t.batch_size}")


class CrossFieldRule(NamedTuple):
    """A cross-field rule and the ``training`` fields it reads.

    Why ``reads``: when a field has a wrong type or value (EK609, EK604, ...), the other rules
    still run on the block with that field at its default, except those that read it (their
    verdict would be about the default, not the job).
    """

    check: Callable[[GrpoSettings], Iterator[Finding]]
    reads: frozenset[str]


def _rule(check: Callable[[GrpoSettings], Iterator[Finding]], *reads: str) -> CrossFieldRule:
    return CrossFieldRule(check, frozenset(reads))


RULE_CHECKS = (
    _rule(_lora, "finetuning_type", "lora", "parallelism"),
    _rule(_backend, "policy_backend", "finetuning_type", "parallelism", "automodel_kwargs"),
    _rule(_overrides, "router_aux_loss_coef", "hf_config_overrides"),
    _rule(_tis, "truncated_importance_sampling_type", "truncated_importance_sampling_ratio",
          "truncated_importance_sampling_ratio_min", "use_importance_sampling_correction"),
    _rule(_rewards, "reward_shaping", "reward_scaling"),
    _rule(_ranges, "min_learning_rate", "learning_rate", "advantage_clip_low",
          "advantage_clip_high", "max_new_tokens", "max_seq_length", "train_mb_tokens"),
    _rule(_modes, "parallelism", "batch_multiplier", "use_dynamic_sampling",
          "batching_strategy", "use_leave_one_out_baseline", "num_generations_per_prompt"),
    _rule(_gpu_layout, "parallelism", "batch_size", "micro_batch_size",
          "vllm_tensor_parallel_size"),
    _rule(_rollouts_per_step, "batch_size", "num_prompts_per_step", "num_generations_per_prompt"),
)
"""Every cross-field rule over ``training``, each run on its own so that one violation never
hides another; EK608 (refs) is checked in ``checks``."""


def findings(training: GrpoSettings, unreadable: frozenset[str]) -> Iterator[Finding]:
    """Every rule's findings, skipping the rules that read an ``unreadable`` field (one whose
    value was refused and left at its default)."""
    for rule in RULE_CHECKS:
        if not rule.reads & unreadable:
            yield from rule.check(training)
