"""The one place the probe touches the Gym runtime and the policy endpoint.

Why one module: every runtime name the phases need is imported here, so a change of their
face is an edit to this file. :class:`LiveProbe` brings the package up **once** (smoke's
bring-up); the phases then swap the scripted answers between rounds and send rows at the
concurrency they choose. A real policy (``--model``) is served by swapping the engine behind
the endpoint, since Gym's model server was configured with its address at bring-up.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envkit.errors import FailedError
from envkit.gym.client import RolloutAbortedError, collect
from envkit.gym.rollout import Rollout
from envkit.gym.rows import expand_rows
from envkit.gym.types import GymRuntimeError, RuntimeOptions
from envkit.model.package import MANIFEST
from envkit.policy_server.generation import GenerationBackend
from envkit.policy_server.scripted import BYTES_PER_TOKEN, Script, ScriptedBackend, prompt_text
from envkit.smoke.isolation import offline_if
from envkit.smoke.run import BringUpRequest, scripted_session
from envkit.validators import RULES
from envkit.validators.spinup import EK704

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.model.diagnostics import Diagnostic

__all__ = ["BringUpRequest", "GymRuntimeError", "LiveProbe", "ProbeAbortedError", "RuntimeOptions",
           "Sent", "expand_rows", "offline_if", "start_failure"]

log = logging.getLogger(__name__)


class ProbeAbortedError(FailedError, RuntimeError):
    """The servers stopped serving while rows were in flight (a server died)."""


@dataclass(frozen=True, slots=True)
class Sent:
    rollout: Rollout
    latency_s: float

    @property
    def failure(self) -> str | None:
        """Why this rollout has no reward: it failed, or Gym masked it (a judge that failed
        answers 0.0 with ``mask_sample``: not a score)."""
        if not self.rollout.ok:
            return self.rollout.failure_reason or "no reward"
        record = self.rollout.record
        if record.get("mask_sample") is True:
            kind = record.get("failure_kind") or "masked"
            return f"Gym masked the sample ({kind}): {record.get('failure_reason') or ''}"
        return None

    @property
    def reward(self) -> float | None:
        return None if self.failure is not None else self.rollout.reward


AFTER_TOOL = "\x00envkit-probe: after a tool result"
"""The key of every policy call that follows a tool result (no prompt text is this)."""
AFTER_TOOL_REPLY = "Done."
"""What the scripted policy says once its calls were answered: answering the prompt again
would repeat the calls, and Gym's simple agent has no step limit by default."""


def turn_key(messages: Any) -> str:
    """``prompt_text``, or ``AFTER_TOOL`` when the conversation ends with a tool result.

    >>> asked = [{"role": "user", "content": "q"}]
    >>> turn_key(asked), turn_key([*asked, {"role": "tool", "content": "{}"}]) == AFTER_TOOL
    ('q', True)
    """
    if isinstance(messages, Sequence) and not isinstance(messages, str) and messages:
        last = messages[-1]
        if isinstance(last, Mapping) and last.get("role") == "tool":
            return AFTER_TOOL
    return prompt_text(messages)


def start_failure(exc: GymRuntimeError) -> tuple[Diagnostic, str]:
    """A failed bring-up as a diagnostic at the manifest, and the failing server's log tail."""
    rule = RULES.get(exc.code or "", EK704)
    first = str(exc).splitlines()[0][:300] if str(exc) else "the servers did not start"
    return rule.at(MANIFEST, f"the Gym servers did not start: {first}",
                   hint=f"{rule.fix} (`envkit smoke PKG` reports the failing server's log)"
                   ), exc.log_tail


class _Switch:
    """Answers through whichever engine is current; its name stays the one Gym knows."""

    def __init__(self, default: GenerationBackend) -> None:
        self.model_name = default.model_name
        self.use(default)

    def use(self, engine: GenerationBackend) -> None:
        self.current = engine
        self.max_model_len = engine.max_model_len

    @property
    def tokenizer(self) -> Any:
        return getattr(self.current, "tokenizer", None)

    def generate(self, prompts: Any, params: Any) -> Any:
        return self.current.generate(prompts, params)

    def encode_prompt(self, prompt: Any) -> list[int]:
        return self.current.encode_prompt(prompt)

    def decode(self, token_ids: Any) -> str:
        return self.current.decode(token_ids)

    def update_weights(self, state_dict: Any) -> None:
        self.current.update_weights(state_dict)

    def close(self) -> None:
        """The engines are their owners' to close."""


class LiveProbe:
    def __init__(self, package: Path, options: RuntimeOptions) -> None:
        self.package = package
        # a reference answer a real policy could write within max_new_tokens is not cut
        self.backend = ScriptedBackend(model_name="envkit-probe", bytes_per_token=BYTES_PER_TOKEN)
        self._switch = _Switch(self.backend)
        self._session = scripted_session(package, self._switch, options)
        self.ready_s: float | None = None

    def __enter__(self) -> LiveProbe:
        t0 = time.monotonic()
        self._servers = self._session.__enter__()  # a failed start closes what it spawned
        self.ready_s = time.monotonic() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        self._session.close()

    @property
    def venv_dir(self) -> Path | None:
        return self._session.venv_dir

    def openapi(self, instance: str) -> Mapping[str, Any]:
        """Server ``instance``'s ``/openapi.json``, or ``{}`` when it does not answer."""
        info = self._servers.servers.get(instance)
        if info is None:
            return {}
        try:
            with urllib.request.urlopen(f"{info.url.rstrip('/')}/openapi.json",
                                        timeout=10) as reply:
                doc = json.loads(reply.read())
        except (OSError, ValueError) as exc:
            log.info("probe: no OpenAPI document from %s: %s", instance, exc)
            return {}
        return doc if isinstance(doc, Mapping) else {}

    @contextlib.contextmanager
    def serving(self, engine: GenerationBackend) -> Iterator[None]:
        """Gym's model calls are answered by ``engine`` inside the block; the caller closes it."""
        self._switch.use(engine)
        try:
            yield
        finally:
            self._switch.use(self.backend)

    def answer(self, by_prompt: Mapping[str, str], fallback: str) -> None:
        """The scripted replies for the next round (swapped between rounds, never during)."""
        self.backend.script = Script(fallback, {**by_prompt, AFTER_TOOL: AFTER_TOOL_REPLY},
                                     key=turn_key)

    def send(self, rows: Sequence[Mapping[str, Any]], concurrency: int, timeout_s: float,
             on_done: Callable[[Sent], None] | None = None) -> list[Sent]:
        """Every row, ``concurrency`` in flight, in row order.

        :raises ProbeAbortedError: a server died meanwhile (what was in flight is dropped).
        """
        def one(row: Mapping[str, Any]) -> Sent:
            t0 = time.monotonic()
            (rollout,) = collect([row], self._servers.run_url, concurrency=1,
                                 timeout_s=timeout_s, abort=self._session.dead)
            sent = Sent(rollout, time.monotonic() - t0)
            if on_done is not None:
                on_done(sent)
            return sent

        pool = ThreadPoolExecutor(max_workers=max(1, concurrency),
                                  thread_name_prefix="envkit-probe")
        futures = [pool.submit(one, row) for row in rows]
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f.exception() for f in done if f.exception() is not None), None)
            if isinstance(failed, RolloutAbortedError):
                raise ProbeAbortedError(str(failed)) from None
            if failed is not None:
                raise failed
            return [f.result() for f in futures]
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
