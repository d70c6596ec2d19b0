"""vLLM backend (GPU): the same ``GenerationBackend`` the HF backend implements.

vLLM cannot run on a CPU-only machine, so it is imported lazily; everything that does not need
the engine (request mapping, output conversion) is a plain function tested without vllm.
Logprobs are requested as ``processed_logprobs`` so they come from the temperature-scaled
distribution, like the HF backend's (what NeMo-RL compares against the trainer's logprobs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.endpoint.generation import (
    Completion,
    FinishReason,
    GenerationError,
    GenerationOutput,
    Prompt,
    SamplingParams,
)

if TYPE_CHECKING:
    import torch

__all__ = ["VLLMBackend", "engine_kwargs", "to_completion", "to_vllm_sampling_kwargs"]


def to_vllm_sampling_kwargs(params: SamplingParams) -> dict[str, Any]:
    """``SamplingParams`` -> keyword arguments for ``vllm.SamplingParams``.

    >>> to_vllm_sampling_kwargs(SamplingParams(n=2, max_tokens=5))["logprobs"]
    0
    >>> to_vllm_sampling_kwargs(SamplingParams(top_k=50))["top_k"], to_vllm_sampling_kwargs(
    ...     SamplingParams())["top_k"]
    (50, -1)
    """
    return {
        "n": params.n,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": -1 if params.top_k is None else params.top_k,  # -1: every token, any vLLM
        "max_tokens": params.max_tokens,
        "seed": params.seed,
        "logprobs": params.top_logprobs,  # vLLM always adds the sampled token's logprob
        "stop": list(params.stop) or None,
    }


def to_completion(output: Any, top_k: int) -> Completion:
    """A vLLM ``CompletionOutput`` -> ``Completion`` (sampled-token logprob + top-k)."""
    ids = tuple(int(t) for t in output.token_ids)
    steps = output.logprobs or []
    logprobs = tuple(float(step[t].logprob) for t, step in zip(ids, steps, strict=False))
    tops = tuple(
        tuple(sorted(((int(t), float(lp.logprob)) for t, lp in step.items()),
                     key=lambda kv: -kv[1])[:top_k])
        for step in steps
    ) if top_k else ()
    reason: FinishReason = "length" if output.finish_reason == "length" else "stop"
    return Completion(ids, logprobs, output.text, reason, tops)


def engine_kwargs(model_dir: str | Path, gpu_memory_utilization: float,
                  tensor_parallel_size: int,
                  hf_config_overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Keyword arguments for ``vllm.LLM``: the job's sizing and its ``hf_config_overrides``.

    vLLM applies ``hf_overrides`` (nested dicts kept) to the model config it loads, the same
    overrides the trainer's copy gets (the "GRPO and Reward Environments" guide).

    >>> engine_kwargs("m", 0.5, 2, {"rms_norm_eps": 1e-5})["hf_overrides"]
    {'rms_norm_eps': 1e-05}
    """
    return {
        "model": str(model_dir),
        "gpu_memory_utilization": gpu_memory_utilization,
        "tensor_parallel_size": tensor_parallel_size,
        "hf_overrides": dict(hf_config_overrides) if hf_config_overrides else None,
        "logprobs_mode": "processed_logprobs",
        "enable_prefix_caching": True,
    }


class VLLMBackend:
    """``vllm.LLM`` behind ``GenerationBackend``; weights updated in place for GRPO."""

    def __init__(self, model_dir: str | Path, *, model_name: str | None = None,
                 gpu_memory_utilization: float = 0.6, tensor_parallel_size: int = 1,
                 hf_config_overrides: Mapping[str, Any] | None = None) -> None:
        try:
            import vllm
        except ImportError:
            msg = "the vllm backend needs `pip install vllm` on a CUDA machine; use --backend hf"
            raise GenerationError(msg) from None
        self._vllm = vllm
        self.model_name = model_name or Path(model_dir).name
        self.llm = vllm.LLM(**engine_kwargs(model_dir, gpu_memory_utilization,
                                            tensor_parallel_size, hf_config_overrides))
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)

    def encode_prompt(self, prompt: Prompt) -> list[int]:
        if not prompt or isinstance(prompt[0], int):
            return [int(t) for t in prompt]  # type: ignore[arg-type]
        return list(self.tokenizer.apply_chat_template(
            [dict(m) for m in prompt], add_generation_prompt=True, tokenize=True))  # type: ignore[arg-type]

    def decode(self, token_ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[GenerationOutput]:
        encoded = [self.encode_prompt(p) for p in prompts]
        sampling = self._vllm.SamplingParams(**to_vllm_sampling_kwargs(params))
        outputs = self.llm.generate([{"prompt_token_ids": ids} for ids in encoded], sampling,
                                    use_tqdm=False)
        return [
            GenerationOutput(tuple(ids), tuple(to_completion(c, params.top_logprobs)
                                               for c in out.outputs))
            for ids, out in zip(encoded, outputs, strict=True)
        ]

    def update_weights(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        model = self.llm.llm_engine.model_executor.driver_worker.worker.model_runner.model
        model.load_weights(weights=list(state_dict.items()))
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        del self.llm
