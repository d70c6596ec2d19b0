"""An OpenAI-compatible HTTP endpoint over a ``GenerationBackend``: what Gym's ``vllm_model`` calls.

The standard library's ``ThreadingHTTPServer`` is enough: the policy is the bottleneck, and the
server runs in the trainer's process next to the weights. One worker thread runs queued
requests in batches (equal sampling parameters, arriving within a few ms), as vLLM would batch
concurrent Gym rollouts. A request with a ``seed`` runs alone, so its samples never depend on
what arrived with it (``envkit train`` seeds every rollout); a backend that batches itself
(``concurrent``: the vLLM engine) takes each request straight from its HTTP thread.

Routes, shaped as vLLM serves them: ``GET /v1/models``, ``GET /health``,
``POST /v1/chat/completions`` (vLLM's ``top_k`` and ``return_tokens_as_token_ids`` included;
the answer carries ``prompt_token_ids`` and ``choices[].token_ids``, so Gym's
``return_token_id_information`` needs no ``/tokenize`` round trip), ``POST /v1/completions``
(text or token ids), ``POST /tokenize``.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from envkit.policy_server.generation import (
    Completion,
    GenerationBackend,
    GenerationError,
    GenerationOutput,
    Prompt,
    SamplingParams,
)
from envkit.policy_server.tool_calls import assistant_message

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["PolicyServer", "sampling_from_request"]

log = logging.getLogger(__name__)

_BATCH_WINDOW_S = 0.005


def sampling_from_request(body: Mapping[str, Any], *, top_k: int | None = None) -> SamplingParams:
    """OpenAI request fields -> ``SamplingParams``; ``top_k`` is the server's default for a
    request that sets none (vLLM's ``top_k``: 0 or -1 mean every token).

    :raises GenerationError: on values outside the API's ranges.
    """
    stop = body.get("stop") or ()
    top = body.get("top_logprobs") or 0
    try:
        k = top_k if body.get("top_k") is None else int(body["top_k"])
        return SamplingParams(
            n=int(_first(body, "n", default=1)),
            temperature=float(_first(body, "temperature", default=1.0)),
            top_p=float(_first(body, "top_p", default=1.0)),
            top_k=None if k is None or k in (0, -1) else k,
            max_tokens=int(_first(body, "max_completion_tokens", "max_tokens", default=1 << 30)),
            seed=None if body.get("seed") is None else int(body["seed"]),
            top_logprobs=int(top) if body.get("logprobs") or top else 0,
            stop=(stop,) if isinstance(stop, str) else tuple(stop),
        )
    except (TypeError, ValueError) as exc:
        raise GenerationError(str(exc)) from None


def _first(body: Mapping[str, Any], *keys: str, default: Any) -> Any:
    return next((body[k] for k in keys if body.get(k) is not None), default)


@dataclass
class _Job:
    prompts: list[Prompt]
    params: SamplingParams
    future: Future[list[GenerationOutput]] = field(default_factory=Future)


class _Batcher:
    """One worker thread: takes queued jobs with equal ``SamplingParams`` and runs them together."""

    def __init__(self, backend: GenerationBackend) -> None:
        self.backend = backend
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._held: list[_Job] = []
        self._thread = threading.Thread(target=self._run, name="envkit-policy-batcher", daemon=True)
        self._thread.start()

    def submit(self, prompts: list[Prompt], params: SamplingParams) -> list[GenerationOutput]:
        if getattr(self.backend, "concurrent", False):
            # the engine batches continuously itself (vLLM): each request goes in as it comes
            return self.backend.generate(prompts, params)
        job = _Job(prompts, params)
        self._queue.put(job)
        return job.future.result()

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _next_batch(self) -> list[_Job] | None:
        first = self._held.pop(0) if self._held else self._queue.get()
        if first is None:
            return None
        if first.params.seed is not None:
            # a seeded request runs alone: the rows batched with it would change its logits'
            # rounding, so its samples would depend on which requests arrived with it
            return [first]
        batch, deadline = [first], time.monotonic() + _BATCH_WINDOW_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                job = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if job is None:
                self._queue.put(None)
                break
            (batch if job.params == first.params else self._held).append(job)
        return batch

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            prompts = [p for job in batch for p in job.prompts]
            try:
                outputs = self.backend.generate(prompts, batch[0].params)
            except Exception as exc:
                for job in batch:
                    job.future.set_exception(exc)
                continue
            for job in batch:
                job.future.set_result(outputs[: len(job.prompts)])
                outputs = outputs[len(job.prompts):]


def _logprob_content(
    backend: GenerationBackend, comp: Completion, as_ids: bool
) -> list[dict[str, Any]]:
    def token(tid: int) -> str:
        return f"token_id:{tid}" if as_ids else backend.decode([tid])

    entries = []
    for i, (tid, lp) in enumerate(zip(comp.token_ids, comp.logprobs, strict=True)):
        tops = comp.top_logprobs[i] if i < len(comp.top_logprobs) else ()
        entries.append({
            "token": token(tid), "logprob": lp, "bytes": None,
            "top_logprobs": [{"token": token(t), "logprob": v, "bytes": None} for t, v in tops],
        })
    return entries


def chat_response(
    backend: GenerationBackend, out: GenerationOutput, body: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``chat.completion`` object vLLM returns, with its token-id extensions."""
    want_logprobs = bool(body.get("logprobs"))
    as_ids = bool(body.get("return_tokens_as_token_ids"))
    choices = [
        {
            "index": i,
            "message": assistant_message(comp.text, bool(body.get("tools"))),
            "finish_reason": comp.finish_reason,
            "logprobs": ({"content": _logprob_content(backend, comp, as_ids)}
                         if want_logprobs else None),
            "token_ids": list(comp.token_ids),
        }
        for i, comp in enumerate(out.completions)
    ]
    return _envelope("chat.completion", backend, out, choices)


def completion_response(
    backend: GenerationBackend, out: GenerationOutput, body: Mapping[str, Any]
) -> dict[str, Any]:
    want = body.get("logprobs") is not None
    choices = []
    for i, comp in enumerate(out.completions):
        logprobs = None
        if want:
            logprobs = {"tokens": [backend.decode([t]) for t in comp.token_ids],
                        "token_logprobs": list(comp.logprobs), "top_logprobs": None,
                        "text_offset": []}
        choices.append({"index": i, "text": comp.text, "finish_reason": comp.finish_reason,
                        "logprobs": logprobs, "token_ids": list(comp.token_ids),
                        "prompt_token_ids": list(out.prompt_token_ids)})
    return _envelope("text_completion", backend, out, choices)


def _envelope(obj: str, backend: GenerationBackend, out: GenerationOutput,
              choices: list[dict[str, Any]]) -> dict[str, Any]:
    gen = sum(len(c.token_ids) for c in out.completions)
    return {
        "id": f"envkit-{uuid.uuid4().hex}",
        "object": obj,
        "created": int(time.time()),
        "model": backend.model_name,
        "choices": choices,
        "prompt_token_ids": list(out.prompt_token_ids),
        "usage": {"prompt_tokens": len(out.prompt_token_ids), "completion_tokens": gen,
                  "total_tokens": len(out.prompt_token_ids) + gen},
    }


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("policy %s - %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._dispatch({
            "/v1/models": self._models, "/health": self._health, "/v1/health": self._health,
        })

    def do_POST(self) -> None:
        self._dispatch({
            "/v1/chat/completions": self._chat, "/v1/completions": self._completions,
            "/tokenize": self._tokenize, "/v1/tokenize": self._tokenize,
        })

    def _dispatch(self, routes: dict[str, Any]) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        route = routes.get(path)
        try:
            if route is None:
                raise _HTTPError(404, f"no route {self.command} {path}", "NotFoundError")
            status, payload = 200, route()
        except _HTTPError as exc:
            status, payload = exc.status, _error(exc.status, str(exc), exc.kind)
        except GenerationError as exc:
            status, payload = 400, _error(400, str(exc), "BadRequestError")
        except Exception as exc:
            log.exception("policy server error")
            message = f"{type(exc).__name__}: {exc}"
            status, payload = 500, _error(500, message, "InternalServerError")
        self._send(status, payload)

    def _body(self) -> dict[str, Any]:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            raise _HTTPError(400, f"request body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise _HTTPError(400, "request body must be a JSON object")
        return body

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _models(self) -> dict[str, Any]:
        backend = self.server.backend
        return {"object": "list", "data": [{
            "id": backend.model_name, "object": "model", "created": 0, "owned_by": "envkit",
            "max_model_len": backend.max_model_len,
        }]}

    def _health(self) -> dict[str, Any]:
        return {"status": "ok"}

    def _chat(self) -> dict[str, Any]:
        body = self._body()
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _HTTPError(400, "`messages` must be a non-empty list")
        params = sampling_from_request(body, top_k=self.server.top_k)
        (out,) = self.server.batcher.submit([messages], params)
        return chat_response(self.server.backend, out, body)

    def _completions(self) -> dict[str, Any]:
        body = self._body()
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            ids: Prompt = _text_ids(self.server.backend, prompt)
        elif isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
            ids = prompt
        else:
            raise _HTTPError(400, "`prompt` must be a string or a list of token ids")
        params = sampling_from_request(
            {**body, "logprobs": body.get("logprobs") is not None}, top_k=self.server.top_k
        )
        (out,) = self.server.batcher.submit([ids], params)
        return completion_response(self.server.backend, out, body)

    def _tokenize(self) -> dict[str, Any]:
        body = self._body()
        backend = self.server.backend
        if isinstance(body.get("messages"), list):
            tokens = backend.encode_prompt(body["messages"])
        elif isinstance(body.get("prompt"), str):
            tokens = _text_ids(backend, body["prompt"])
        else:
            raise _HTTPError(400, "give `messages` or `prompt`")
        return {"tokens": tokens, "count": len(tokens), "max_model_len": backend.max_model_len}


def _text_ids(backend: GenerationBackend, text: str) -> list[int]:
    tokenizer = getattr(backend, "tokenizer", None)
    if tokenizer is None:
        msg = "this backend cannot tokenize raw text"
        raise GenerationError(msg)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _error(status: int, message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": status, "param": None},
            "object": "error", "message": message, "type": kind, "code": status}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    backend: GenerationBackend
    batcher: _Batcher
    top_k: int | None


_SHUTDOWN_POLL_S = 0.05
"""How often the serving loop looks for ``close()``: ``socketserver``'s default made every
command wait after its verdict for the policy server to stop."""


class PolicyServer:
    """Serve ``backend`` on a free loopback port until ``close()`` (or the ``with`` block ends).

    ``top_k``: the job's ``training.top_k``, for every request that sets none (Gym's agents
    never do), as the platform's vLLM applies ``policy.generation.top_k``.
    """

    def __init__(self, backend: GenerationBackend, *, top_k: int | None = None) -> None:
        self.backend = backend
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.backend = backend
        self._httpd.batcher = _Batcher(backend)
        self._httpd.top_k = top_k
        self.api_key = "envkit-local"
        """What Gym's model server sends as its key (loopback only: none is checked)."""
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(_SHUTDOWN_POLL_S,),
                                        name="envkit-policy-http", daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host  # AF_INET: always str
        return f"http://{name}:{port}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.batcher.stop()

    def __enter__(self) -> PolicyServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
