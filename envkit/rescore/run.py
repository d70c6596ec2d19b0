"""``rescore``: a recorded run's rollouts, scored again by the package's current verifier.

Why without a policy: iterating on a verifier should not cost new rollouts. The recorded rows
carry the full ``response`` and ``run.json`` names the package, so rescore brings the same
servers up (a scripted endpoint stands in for the policy, which nothing calls) and posts each
row to its agent's ``/verify``. A server whose reward depends on per-episode state is refused
(``envkit.rescore.state``), never guessed.
"""

from __future__ import annotations

import functools
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit.errors import UsageError
from envkit.gym import (
    GymServers,
    GymSession,
    PolicyEndpoint,
    RunFile,
    RuntimeOptions,
    post_row,
    read_run_file,
)
from envkit.model.dataset import Dataset
from envkit.policy_server.scripted import ScriptedBackend
from envkit.policy_server.server import PolicyServer
from envkit.rescore.report import RescoreReport, RowScore
from envkit.rescore.state import Verdict, can_reverify
from envkit.supply.atomic import write_text
from envkit.supply.provenance import package_record

__all__ = ["RescoreRequest", "agent_verifiers", "read_rollouts", "rescore"]

log = logging.getLogger(__name__)

_RUN_ONLY = frozenset({"reward"})
"""Keys of a recorded row that the verify request must not carry from the run."""


@dataclass(frozen=True, slots=True)
class RescoreRequest:
    run_dir: Path
    output: Path | None = None
    """Write the rows, re-scored (``reward`` the new one, ``previous_reward`` the run's)."""
    offline: bool | None = None
    """``None``: as the run was brought up."""
    gym_python: Path | None = None
    allow_python_override: bool = False
    concurrency: int = 8
    timeout_s: float = 300.0
    install_timeout_s: float = 1800.0
    cache_dir: Path | None = field(default=None, compare=False)


def read_rollouts(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line, row)`` of every non-blank line of a rollouts file.

    :raises UsageError: the file is missing, or a line is not a JSON object.
    """
    try:
        path.open("rb").close()
    except OSError as exc:  # the reader below passes an unreadable file over
        raise UsageError(f"{path}: cannot read the run's rollouts: {exc}") from None
    rows = []
    for row in Dataset(path.parent, (path.name,)).iter_rows(path.name):
        if row.error is not None:
            raise UsageError(f"{path}:{row.line}: not JSON ({row.error})")
        if not isinstance(row.data, dict):
            raise UsageError(f"{path}:{row.line}: not a JSON object")
        rows.append((row.line, row.data))
    return rows


def agent_verifiers(config: Mapping[str, Any], agent: str) -> tuple[str, ...]:
    """The resources servers ``agent``'s block in Gym's merged config refers to.

    >>> cfg = {"a": {"responses_api_agents": {"simple_agent": {"resources_server":
    ...     {"type": "resources_servers", "name": "r"}, "model_server":
    ...     {"type": "responses_api_models", "name": "policy_model"}}}}}
    >>> agent_verifiers(cfg, "a")
    ('r',)
    """
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            if node.get("type") == "resources_servers" and isinstance(node.get("name"), str):
                found.append(node["name"])
            for value in node.values():
                walk(value)

    walk(config.get(agent))
    return tuple(dict.fromkeys(found))


def rescore(request: RescoreRequest) -> RescoreReport:
    """Bring the run's package up again and score every recorded row with its verifier.

    :raises UsageError: the run directory holds no run record, or its package is gone.
    :raises GymRuntimeError: the servers did not come up.
    """
    run = read_run_file(request.run_dir)
    package = Path(run.package)
    if not (package / "nemo-environment.yaml").is_file():
        raise UsageError(f"the run's package {package} is not there any more "
                         "(rescore scores with the package the run recorded)")
    rows = read_rollouts(request.run_dir / run.rollouts)
    changed = _package_changed(package, run)
    options = RuntimeOptions(
        gym_version=run.gym_version, gym_python=request.gym_python,
        allow_python_override=request.allow_python_override,
        offline=run.offline if request.offline is None else request.offline,
        startup_timeout_s=request.install_timeout_s, cache_dir=request.cache_dir)
    backend = ScriptedBackend()
    policy = PolicyServer(backend)
    endpoint = PolicyEndpoint(policy.base_url, policy.api_key, backend.model_name)
    try:
        session = GymSession(package, endpoint, options, owned=(policy,))
    except BaseException:
        policy.close()
        raise
    with session as servers:
        log.info("servers ready; scoring %d recorded row(s) again", len(rows))
        scores = _score(servers, rows, request)
    output = None if request.output is None else str(_write(request.output, rows, scores))
    return RescoreReport(str(request.run_dir), str(package), run.rollouts, changed,
                         tuple(scores), output)


def _package_changed(package: Path, run: RunFile) -> bool | None:
    if run.package_sha256 is None:
        return None
    try:
        return package_record(package).package_sha256 != run.package_sha256
    except OSError:
        return None


def _score(servers: GymServers, rows: list[tuple[int, dict[str, Any]]],
           request: RescoreRequest) -> list[RowScore]:
    verdicts: dict[str, Verdict] = {}
    for server in {s for _, row in rows for s in agent_verifiers(servers.config, _agent(row))}:
        verdicts[server] = _verdict(servers, server)
        if not verdicts[server].ok:
            log.warning("refused: %s", verdicts[server].reason)
    one = functools.partial(_one, servers, verdicts, timeout_s=request.timeout_s)
    with ThreadPoolExecutor(max_workers=max(1, request.concurrency)) as pool:
        scores = []
        for n, score in enumerate(pool.map(one, rows), 1):
            scores.append(score)
            if n % 25 == 0 or n == len(rows):
                log.info("scored %d of %d", n, len(rows))
    return scores


def _agent(row: Mapping[str, Any]) -> str:
    ref = row.get("agent_ref")
    return str(ref.get("name", "")) if isinstance(ref, Mapping) else ""


def _one(servers: GymServers, verdicts: Mapping[str, Verdict],
         item: tuple[int, dict[str, Any]], timeout_s: float) -> RowScore:
    line, row = item
    agent = _agent(row)
    old = _reward(row.get("reward"))
    verifiers = agent_verifiers(servers.config, agent)
    if len(verifiers) != 1:
        why = ("no resources server to verify with" if not verifiers else
               f"several resources servers ({', '.join(verifiers)}): which one scored is unknown")
        return RowScore(line, agent, old, None, "refused", f"agent `{agent}` has {why}")
    verdict = verdicts[verifiers[0]]
    if not verdict.ok:
        return RowScore(line, agent, old, None, "refused", verdict.reason)
    if not isinstance(row.get("response"), Mapping):
        return RowScore(line, agent, old, None, "failed", "the row records no `response`")
    body = {k: v for k, v in row.items() if k not in _RUN_ONLY}
    try:
        answer = post_row(f"{servers.servers[verifiers[0]].url}/verify", body, timeout_s)
    except RuntimeError as exc:
        return RowScore(line, agent, old, None, "failed", str(exc))
    new = _reward(answer.get("reward"))
    if new is None:
        return RowScore(line, agent, old, None, "failed", "/verify answered with no reward")
    return RowScore(line, agent, old, new, "rescored")


def _reward(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _verdict(servers: GymServers, server: str) -> Verdict:
    url = servers.servers[server].url
    mode = _get_json(f"{url}/reverify_mode")
    openapi = _get_json(f"{url}/openapi.json")
    return can_reverify(server, mode if isinstance(mode, str) else None,
                        openapi if isinstance(openapi, dict) else None)


def _get_json(url: str) -> Any:
    """``GET url`` as JSON; ``None`` when it does not answer with JSON (an older Gym)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return json.load(resp)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _write(path: Path, rows: list[tuple[int, dict[str, Any]]], scores: list[RowScore]) -> Path:
    lines: Iterator[str] = (
        json.dumps({**row, "reward": score.new_reward, "previous_reward": score.old_reward,
                    "rescore_status": score.status})
        for (_, row), score in zip(rows, scores, strict=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, "".join(f"{line}\n" for line in lines))
