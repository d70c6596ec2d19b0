"""Send prompt rows to a package's agents and collect rewards, as NeMo-RL and ``gym eval run`` do.

Each row is POSTed to ``/run`` of the environment server relaying its ``agent_ref`` agent (else
of the agent itself); Gym's answer (the row, the ``response``, the ``reward`` and, with
``return_token_id_information``, the token ids and logprobs GRPO needs) becomes one
:class:`~envkit.gym.rollout.Rollout`. A failed request is a failed rollout; the batch goes on.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from envkit.errors import FailedError
from envkit.gym.rollout import Rollout, TokenTurn

__all__ = [
    "RequestOptions",
    "RolloutAbortedError",
    "collect",
    "mean_reward_by_agent",
    "post_row",
    "result_from_record",
    "write_results",
]


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """How rows are sent: the sampling overrides put into each row, and the request limits."""

    temperature: float = 1.0
    max_tokens: int = 64
    """``responses_create_params.max_output_tokens`` (the trainer's ``max_new_tokens``)."""
    concurrency: int = 8
    timeout_s: float = 600.0
    """Per-row request timeout."""


def _turns(response: Mapping[str, Any]) -> tuple[TokenTurn, ...]:
    return tuple(TokenTurn(tuple(item.get("prompt_token_ids") or ()),
                           tuple(item["generation_token_ids"]),
                           tuple(item.get("generation_log_probs") or ()))
                 for item in response.get("output") or []
                 if isinstance(item, Mapping) and item.get("generation_token_ids") is not None)


def _truncated(response: Mapping[str, Any]) -> bool:
    details = response.get("incomplete_details") or {}
    return response.get("status") == "incomplete" and details.get("reason") == "max_output_tokens"


_FAILURE_CLASS = "_ng_failure_class"
"""Gym 0.7's mark on a rollout that errored (its agents answer ``reward: 0.0`` with it)."""


def _gym_failure(record: Mapping[str, Any]) -> str | None:
    """Why Gym says the rollout failed (``_ng_failure_class``, or an environment server's
    ``failure`` object), else None."""
    detail = record.get("failure")
    detail = detail if isinstance(detail, Mapping) else {}
    kind = record.get(_FAILURE_CLASS) or ("environment_server_failed" if detail else None)
    if kind is None:
        return None
    why = (record.get("_ng_failure_message") or record.get("error")
           or detail.get("failure_reason") or "no reason given")
    return f"Gym reports a failed rollout ({kind}): {why}"


def result_from_record(index: int, agent: str, record: Mapping[str, Any]) -> Rollout:
    """Gym's ``/run`` answer -> ``Rollout``. A failure is never a reward: an answer that Gym
    marks as failed (:func:`_gym_failure`) or that has no numeric reward is a failed Rollout."""
    raw = record.get("response")
    response: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    reward = record.get("reward")
    if (failure := _gym_failure(record)) is not None:
        return Rollout.failed(index, agent, failure, dict(record))
    if not isinstance(reward, int | float) or isinstance(reward, bool):
        return Rollout.failed(index, agent, f"no numeric `reward` in the answer: {reward!r}",
                              dict(record))
    return Rollout.from_turns(index, agent, float(reward), _turns(response),
                              _truncated(response), dict(record))


def post_row(url: str, row: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
    """POST one row; returns the JSON answer.

    :raises RuntimeError: with a one-line reason on HTTP errors, refused connections, timeouts.
    """
    request = urllib.request.Request(url, data=json.dumps(row).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            return cast("dict[str, Any]", json.load(resp))
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")[:300]
        msg = f"HTTP {exc.code} from {url}: {body}"
        raise RuntimeError(msg) from None
    except OSError as exc:  # URLError, a refused connection, a timeout
        reason = getattr(exc, "reason", exc)
        msg = f"{url} unreachable: {reason}"
        raise RuntimeError(msg) from None
    except json.JSONDecodeError as exc:
        msg = f"{url} answered with invalid JSON: {exc}"
        raise RuntimeError(msg) from None


def _agent(row: Mapping[str, Any]) -> str:
    ref = row.get("agent_ref")
    return str(ref.get("name", "")) if isinstance(ref, Mapping) else ""


def _one(index: int, row: Mapping[str, Any], url_for: Callable[[str], str],
         timeout_s: float) -> Rollout:
    agent = _agent(row)
    try:
        url = url_for(agent)
    except KeyError:
        return Rollout.failed(index, agent, f"agent {agent!r} is not running in this package",
                              dict(row))
    try:
        record = post_row(url, row, timeout_s)
    except RuntimeError as exc:
        return Rollout.failed(index, agent, str(exc), dict(row))
    return result_from_record(index, agent, {**row, **record})


class RolloutAbortedError(FailedError, RuntimeError):
    """``abort()`` named a reason (a server died) while rows were in flight.

    ``results`` has one :class:`Rollout` per row, in row order: those that finished, and the
    others failed with the reason.
    """

    def __init__(self, reason: str, results: Sequence[Rollout] = ()) -> None:
        super().__init__(reason)
        self.results = list(results)


def collect(
    rows: Sequence[Mapping[str, Any]],
    url_for: Callable[[str], str],
    *,
    concurrency: int = 8,
    timeout_s: float = 600.0,
    on_result: Callable[[Rollout], None] | None = None,
    abort: Callable[[], str | None] | None = None,
    poll_s: float = 2.0,
) -> list[Rollout]:
    """Run every row (``concurrency`` in flight); results in row order.

    ``url_for(agent)``: its ``/run`` URL (``GymServers.run_url``). ``abort()`` is polled every
    ``poll_s`` (``GymSession.dead``): a row whose server died would wait out ``timeout_s``.

    :raises RolloutAbortedError: ``abort()`` returned a reason; queued rows are cancelled and
        rows in flight are left to fail when their servers go away.
    """
    results: list[Rollout | None] = [None] * len(rows)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    pending = {pool.submit(_one, i, row, url_for, timeout_s) for i, row in enumerate(rows)}
    try:
        while pending:
            done, pending = wait(pending, timeout=poll_s if abort else None,
                                 return_when=FIRST_COMPLETED)
            for future in done:
                result = future.result()
                results[result.index] = result
                if on_result is not None:
                    on_result(result)
            reason = abort() if abort is not None and pending else None
            if reason:
                raise RolloutAbortedError(reason, _with_aborted(results, rows, reason))
    finally:
        pool.shutdown(wait=not pending, cancel_futures=True)
    return [r for r in results if r is not None]


def write_results(path: Path, results: Sequence[Rollout]) -> Path | None:
    """Gym's rollout rows (with ``reward``) to ``path``; failed rows to ``<path>.failures.jsonl``
    (Gym's failures sidecar). Returns the sidecar path when there were failures."""
    path.parent.mkdir(parents=True, exist_ok=True)
    failed = [r for r in results if not r.ok]
    path.write_text("".join(json.dumps(r.record) + "\n" for r in results if r.ok))
    if not failed:
        return None
    sidecar = path.with_name(path.name.removesuffix(".jsonl") + ".failures.jsonl")
    sidecar.write_text("".join(
        json.dumps({**r.record, "failure_reason": r.failure_reason}) + "\n" for r in failed))
    return sidecar


def append_results(path: Path, results: Sequence[Rollout]) -> None:
    """Gym's rows of the finished ``results`` appended to ``path`` (a training run's record,
    batch after batch: what ``envkit rescore`` scores again)."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r.record) + "\n" for r in results if r.ok))


def _with_aborted(results: Sequence[Rollout | None], rows: Sequence[Mapping[str, Any]],
                  reason: str) -> list[Rollout]:
    """Every row's result, the unfinished ones failed with ``reason``."""
    return [r if r is not None else Rollout.failed(i, _agent(rows[i]), f"aborted: {reason}",
                                                   dict(rows[i])) for i, r in enumerate(results)]


def mean_reward_by_agent(results: Iterable[Rollout]) -> dict[str, float]:
    """Mean reward per agent over the rollouts that finished."""
    sums: dict[str, list[float]] = {}
    for result in results:
        if result.ok and result.reward is not None:
            sums.setdefault(result.agent, []).append(result.reward)
    return {agent: sum(v) / len(v) for agent, v in sorted(sums.items())}
