"""The vLLM backend's sampling and output mapping, checked without vLLM installed."""

from __future__ import annotations

import os
import sys
import threading
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("psutil")  # the `train` extra

from envkit.policy_server.generation import SamplingParams
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


class _SlowEngine:
    """A stand-in for vLLM's engine: each request finishes after ``steps`` engine steps; a
    step blocks until the test lets it go, so the test can send requests mid-step."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.running: dict[str, int] = {}
        self.batches: list[list[str]] = []
        self.in_step = threading.Event()
        self.go = threading.Semaphore(0)

    def add_request(self, request_id: str, prompt: dict, sampling: object) -> None:
        if prompt["prompt_token_ids"] == [-1]:
            raise ValueError("refused")
        self.running[request_id] = 0

    def has_unfinished_requests(self) -> bool:
        return bool(self.running)

    def step(self) -> list[SimpleNamespace]:
        self.batches.append(sorted(self.running))
        self.in_step.set()
        self.go.acquire()
        self.in_step.clear()
        out = []
        for rid in list(self.running):
            self.running[rid] += 1
            if self.running[rid] == self.steps:
                del self.running[rid]
                out.append(SimpleNamespace(request_id=rid, finished=True))
        return out


def test_a_request_sent_mid_step_joins_the_next_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sending never waits for the engine's step (nor for the batch in flight to finish), and
    a request the engine refuses fails alone."""
    from envkit.trainer.generation.vllm import _EngineLoop

    kind = SimpleNamespace(FINAL_ONLY="final")
    monkeypatch.setitem(sys.modules, "vllm.sampling_params",
                        SimpleNamespace(RequestOutputKind=kind))
    engine = _SlowEngine(steps=3)
    loop = _EngineLoop(engine)
    try:
        first = loop.submit([1], SimpleNamespace())
        assert engine.in_step.wait(10)
        started = time.monotonic()
        second = loop.submit([2], SimpleNamespace())  # the engine is mid-step
        refused = loop.submit([-1], SimpleNamespace())
        assert time.monotonic() - started < 1
        for _ in range(4):
            engine.go.release()
        assert first.result(10).request_id == "envkit-0"
        assert second.result(10).request_id == "envkit-1"
        with pytest.raises(ValueError, match="refused"):
            refused.result(10)
        assert engine.batches[:2] == [["envkit-0"], ["envkit-0", "envkit-1"]]
    finally:
        for _ in range(8):
            engine.go.release()
        loop.stop()


def test_cpu_engines_run_in_process_unless_the_environment_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from envkit.trainer.generation.vllm import cpu_in_process

    set_threads = torch.set_num_threads
    # set, then deleted: monkeypatch records the variable as it was, so what cpu_in_process
    # sets is taken back after the test (a bare delenv of an absent variable records nothing)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "")
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING")
    with cpu_in_process():
        assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
        torch.set_num_threads = lambda n: None  # what vLLM's in-process worker does
    assert torch.set_num_threads is set_threads  # the trainer's process keeps its own
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    with cpu_in_process():
        assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"
