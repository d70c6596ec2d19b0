"""The trained policy: an HF causal LM, optionally wrapped in a PEFT LoRA adapter.

Why logprobs at the sampling temperature: the sampler draws from softmax(logits / T), so the
ratio and the importance weight compare like with like (NeMo-RL divides by T the same way).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from envkit.trainer.hf_overrides import apply_hf_overrides

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from envkit.trainer.config import GrpoConfig, LoraSettings

__all__ = [
    "Policy",
    "announce_backend",
    "generation_weights",
    "load_policy",
    "lora_config",
    "model_mode",
    "token_logprobs",
]

log = logging.getLogger(__name__)


@dataclass
class Policy:
    model: Any
    tokenizer: Any
    is_lora: bool

    def save(self, out_dir: Path) -> None:
        """A PEFT adapter dir for LoRA, a full model dir otherwise; tokenizer alongside."""
        self.model.save_pretrained(out_dir)
        self.tokenizer.save_pretrained(out_dir)


def lora_config(settings: LoraSettings) -> Any:
    """peft ``LoraConfig`` with the "GRPO and Reward Environments" guide's either/or module
    selection.

    Neither list -> ``all-linear``. Either list set turns that off: ``exclude_modules`` alone
    applies to peft's default targets for the architecture, not to every linear layer.
    """
    from peft import LoraConfig

    both_unset = settings.target_modules is None and settings.exclude_modules is None
    targets = "all-linear" if both_unset else settings.target_modules
    return LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=list(targets) if isinstance(targets, tuple) else targets,
        exclude_modules=list(settings.exclude_modules) if settings.exclude_modules else None,
        task_type="CAUSAL_LM",
    )


def load_policy(model_dir: str | Path, cfg: GrpoConfig) -> Policy:
    """Load weights (float32 on CPU) and tokenizer; wrap in LoRA when asked.

    ``hf_config_overrides`` go into the config before the weights load (as NeMo-RL passes
    them as config kwargs); ``activation_checkpointing`` recomputes each decoder layer in the
    backward pass instead of keeping its activations.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    config = AutoConfig.from_pretrained(model_dir)
    apply_hf_overrides(config, cfg.hf_config_overrides)
    model = AutoModelForCausalLM.from_pretrained(model_dir, config=config, dtype=torch.float32)
    if torch.cuda.is_available():  # train on the GPU when there is one (gpu_check.sh)
        model = model.to("cuda")
    if cfg.training.activation_checkpointing:
        _enable_checkpointing(model, lora=cfg.training.finetuning_type == "lora")
    if cfg.training.finetuning_type == "lora":
        from peft import get_peft_model

        model = get_peft_model(model, lora_config(cfg.lora))
    return Policy(model, tokenizer, cfg.training.finetuning_type == "lora")


def _enable_checkpointing(model: Any, *, lora: bool) -> None:
    """HF gradient checkpointing (it runs only in train mode; ``grpo`` trains in train mode).

    Why input grads for LoRA (peft's recipe): with the base weights frozen, nothing entering a
    checkpointed layer requires grad, and a reentrant checkpoint (older transformers' default)
    would then return no gradients for the adapters inside it.
    """
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.x's new name
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    if lora:
        model.enable_input_require_grads()


def announce_backend(cfg: GrpoConfig) -> None:
    """Say once which ``policy_backend`` was asked for and what trains here.

    On the platform ``automodel`` and ``dtensor`` are different NeMo-RL workers; locally both
    run the same HF transformers + torch code.
    """
    log.info(
        "policy_backend %r requested; locally it trains with HF transformers + torch in one "
        "process (the platform runs NeMo-RL's %s worker)",
        cfg.training.backend,
        cfg.training.backend,
    )


@contextmanager
def model_mode(model: Any, *, training: bool) -> Iterator[None]:
    """``model`` in train or eval mode for the block, then back in the mode it was in."""
    was = model.training
    model.train(training)
    try:
        yield
    finally:
        model.train(was)


def token_logprobs(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    temperature: float,
    position_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """Logprob of each next token. input_ids, attention_mask, position_ids (b, L) -> (b, L - 1).

    Entry ``[i, t]`` is log p(input_ids[i, t + 1] | prefix), right padding assumed. For packed
    rows pass ``attention_mask=None`` and position ids that restart per rollout: HF builds a
    block-diagonal causal mask from them, but only without a KV cache, hence ``use_cache=False``
    (with a cache the rollouts would attend to each other).
    """
    logits = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        use_cache=False,
    ).logits[:, :-1]
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    return logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def generation_weights(policy: Policy) -> dict[str, torch.Tensor]:
    """Weights a plain (non-PEFT) copy of the model loads: LoRA merged in, names unwrapped.

    Why merge: the generation engine serves the base architecture (vLLM, the HF backend), so
    after each step it receives W + (alpha / r) B A, exactly what the adapter computes.
    """
    model = policy.model
    if not policy.is_lora:
        return {k: v.detach().clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model.merge_adapter()
        try:
            state = model.get_base_model().state_dict()
            return {
                k.replace(".base_layer", ""): v.detach().clone()
                for k, v in state.items()
                if "lora_" not in k
            }
        finally:
            model.unmerge_adapter()
