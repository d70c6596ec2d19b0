"""The vLLM backend's sampling and output mapping, checked without vLLM installed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("psutil")  # the `train` extra

from envkit.trainer.generation import SamplingParams
from envkit.trainer.generation.vllm import to_completion, to_vllm_sampling_kwargs


def test_vllm_mapping_without_vllm() -> None:
    kwargs = to_vllm_sampling_kwargs(SamplingParams(n=2, temperature=0.5, max_tokens=7,
                                                    top_logprobs=1, stop=("x",)))
    assert kwargs == {"n": 2, "temperature": 0.5, "top_p": 1.0, "top_k": -1, "max_tokens": 7,
                      "seed": None, "logprobs": 1, "stop": ["x"]}
    # the job's top_k reaches vLLM's sampler (-1 above: every token, in every vLLM release)
    assert to_vllm_sampling_kwargs(SamplingParams(top_k=50, seed=3))["top_k"] == 50
    lp = SimpleNamespace
    out = SimpleNamespace(token_ids=[4, 9], text="ab", finish_reason="length",
                          logprobs=[{4: lp(logprob=-0.1), 2: lp(logprob=-3.0)},
                                    {9: lp(logprob=-0.7), 4: lp(logprob=-0.2)}])
    comp = to_completion(out, top_k=1)
    assert comp.logprobs == (-0.1, -0.7)
    assert comp.top_logprobs == (((4, -0.1),), ((4, -0.2),))
    assert comp.truncated
