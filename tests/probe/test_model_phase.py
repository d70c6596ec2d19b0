"""``envkit probe --model``'s phase against a stand-in for Gym's ``/run``
(``support.probe_serving``): each row's prompt goes to whichever engine the phase serves (a
real ``GenerationBackend``: the scripted one, or the tiny HF model), sampled with the row's
own sampling fields and seed, and the reply is scored in Python. The real path (the package's
Gym servers, the probe's policy endpoint) is ``test_model_gym.py``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.probe_fakes import make_row
from support.probe_serving import JOB, Phase, ServingLive, by_index, serving_ctx

from envkit.model.diagnostics import Severity
from envkit.policy_server.scripted import ScriptedBackend
from envkit.probe.phases.model import PROBE_SALT, ModelDirError, ModelPhase, seeded_batch


def test_constant_policy_groups_are_an_error(tmp_path: Path) -> None:
    live = ServingLive(lambda reply, row: float(reply == "a"))
    result = Phase(tmp_path, ScriptedBackend("zz")).run(serving_ctx(live))
    (agent,) = result.agents
    assert (agent.signal.groups, agent.signal.zero_variance) == (4, 4)
    assert agent.signal.no_gradient_share == 1.0 and agent.mean_reward == 0.0
    (d,) = result.diagnostics
    assert (d.code, d.severity, d.path, d.line) == ("EK810", Severity.ERROR, "cfg.yaml", 3)
    assert "4 of 4 groups" in d.message and "cannot learn" in d.message
    assert len(live.replies) == 16 and set(live.replies) == {"zz"}


def test_over_the_threshold_warns(tmp_path: Path) -> None:
    result = Phase(tmp_path, ScriptedBackend("zz")).run(serving_ctx(ServingLive(by_index)))
    (agent,) = result.agents
    assert agent.signal.zero_variance_share == 0.75
    (d,) = result.diagnostics
    assert (d.code, d.severity) == ("EK810", Severity.WARNING)
    assert "over probe-zero-variance-warn 50%" in d.message
    quiet = Phase(tmp_path, ScriptedBackend("zz")).run(
        serving_ctx(ServingLive(by_index), zero_variance_warn=0.8))
    assert quiet.diagnostics == ()


def test_failures_are_counted_not_scored(tmp_path: Path) -> None:
    live = ServingLive(by_index, fails=lambda row: row["_ng_rollout_index"] == 0)
    result = Phase(tmp_path, ScriptedBackend("zz")).run(serving_ctx(live))
    (agent,) = result.agents
    assert (agent.rollouts, agent.failed, agent.signal.samples) == (16, 4, 12)
    assert [d.code for d in result.diagnostics] == ["EK807", "EK810"]
    assert "4 of 16" in result.diagnostics[0].message


def test_dynamic_sampling_that_never_fills(tmp_path: Path) -> None:
    dynamic = replace(JOB, dynamic_sampling=True, batch_multiplier=1.0, max_gen_batches=2)
    result = Phase(tmp_path, ScriptedBackend("zz")).run(serving_ctx(ServingLive(by_index),
                                                             job=dynamic))
    # one group of four is mixed: with leave-one-out every sample of it keeps a spread
    assert result.total.kept_share == 0.25 and result.expected_gen_batches == 4
    codes = [(d.code, d.severity) for d in result.diagnostics]
    assert codes == [("EK810", Severity.WARNING), ("EK811", Severity.ERROR)]
    assert "needs about 4 per step" in result.diagnostics[-1].message
    enough = replace(dynamic, max_gen_batches=3)
    assert [d.code for d in Phase(tmp_path, ScriptedBackend("zz")).run(
        serving_ctx(ServingLive(by_index), job=enough)).diagnostics] == ["EK810"]
    never = Phase(tmp_path, ScriptedBackend("zz")).run(
        serving_ctx(ServingLive(lambda reply, row: 0.0), job=dynamic))
    assert never.expected_gen_batches is None
    assert "never fills a step" in never.diagnostics[-1].message


def test_rows_are_seeded_per_sample_and_carry_top_k() -> None:
    from envkit.trainer.seeds import sample_seed, step_seed

    rows = [make_row(i, w).data for i, w in enumerate(["planet", "orange"])]
    groups = {"a": rows, "b": rows[:1]}
    first, owners = seeded_batch(groups, JOB, PROBE_SALT, JOB.top_k)
    again, _ = seeded_batch(groups, JOB, PROBE_SALT, JOB.top_k)
    bodies = [json.loads(r["responses_create_params"]["metadata"]["extra_body"])
              for r in first]
    assert bodies == [json.loads(r["responses_create_params"]["metadata"]["extra_body"])
                      for r in again]
    assert owners == [("a", 0)] * 4 + [("a", 1)] * 4 + [("b", 0)] * 4
    batch = step_seed(JOB.seed, 0, PROBE_SALT)  # group ids run on across the agents
    assert [b["seed"] for b in bodies] == [sample_seed(batch, g, i)
                                           for g in range(3) for i in range(4)]
    assert {b["top_k"] for b in bodies} == {5}
    assert batch != step_seed(JOB.seed, 0)  # not the draws of any training step's groups
    params = first[0]["responses_create_params"]
    assert (params["temperature"], params["max_output_tokens"]) == (1.0, 8)


def test_the_tiny_model_samples_its_own_replies(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from envkit.trainer.generation.hf import HFBackend
    from envkit.trainer.tiny_model import make_tiny_model

    model = make_tiny_model(tmp_path / "model", seed=0)

    def run() -> tuple[list[str], Any, HFBackend]:
        live = ServingLive(lambda reply, row: reply.count("a") / 8)
        engine = HFBackend(model)
        result = Phase(tmp_path / "model", engine).run(serving_ctx(live, rows=2))
        return live.replies, result, engine

    replies, result, engine = run()
    again, _, _ = run()
    assert replies == again  # seeded: the same job samples the same replies
    assert len(set(replies)) > 1  # a sampled policy, not a script
    assert result.agents[0].rollouts == 8
    assert engine.model is None  # the phase closed the engine it loaded


def test_a_model_dir_needs_a_config(tmp_path: Path) -> None:
    with pytest.raises(ModelDirError, match=r"no config\.json"):
        ModelPhase(tmp_path)


def test_model_adds_the_phase_last(tmp_path: Path) -> None:
    from envkit.probe.run import PHASES, ProbeRequest, phases_for

    assert phases_for(ProbeRequest(tmp_path)) == PHASES
    Phase(tmp_path, ScriptedBackend("zz"))  # writes a config.json
    *first, last = phases_for(ProbeRequest(tmp_path, model=tmp_path, model_backend="vllm"))
    assert tuple(first) == PHASES
    assert isinstance(last, ModelPhase) and (last.model, last.backend) == (tmp_path, "vllm")
