"""Generation backends behind one narrow interface: HF transformers and vLLM (CPU or GPU)."""

from __future__ import annotations

from envkit.policy_server.generation import (
    Completion,
    GenerationBackend,
    GenerationError,
    GenerationOutput,
    Prompt,
    SamplingParams,
)

__all__ = [
    "Completion",
    "GenerationBackend",
    "GenerationError",
    "GenerationOutput",
    "Prompt",
    "SamplingParams",
]
