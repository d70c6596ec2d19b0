"""The Gym source's sample layout (multi-turn masks, the turn cap), the per-sample seeds it puts
into the rows, and the session's liveness probe (a dead port is found without waiting for a row
timeout)."""

from __future__ import annotations

import json
import socket
from types import SimpleNamespace

import pytest

pytest.importorskip("torch")

from envkit.gym.rollout import Rollout, TokenTurn
from envkit.gym.rows import expand_rows
from envkit.gym.session import unreachable as _unreachable
from envkit.trainer.batch import build_microbatch
from envkit.trainer.microbatch import MicroBatchPlan
from envkit.trainer.seeds import sample_seed, step_seed
from envkit.trainer.sources.gym import rollout_from_turns as _layout
from envkit.trainer.sources.gym import seed_rows


def _turn(prompt, gen, lps):
    return TokenTurn(tuple(prompt), tuple(gen), tuple(lps))


def rollout_from_turns(group, turns, reward, truncated, max_turns):
    """The client's sample for these policy calls, laid out as the Gym source does."""
    answer = Rollout.from_turns(0, "agent", reward, tuple(turns), truncated, {})
    return _layout(answer, group, max_turns)


def test_single_turn_rollout():
    r = rollout_from_turns(3, [_turn([1, 2], [7, 8], (-0.1, -0.2))], 0.5, False, max_turns=1)
    assert (r.group, r.prompt_ids, r.completion_ids) == (3, (1, 2), (7, 8))
    assert r.completion_mask == (1, 1)
    assert r.truncated is False


def test_multi_turn_masks_environment_tokens():
    turns = [
        _turn([1, 2], [7], (-0.1,)),
        _turn([1, 2, 7, 50, 51], [8, 9], (-0.2, -0.3)),  # 50, 51: tool result inserted
    ]
    r = rollout_from_turns(0, turns, 1.0, False, max_turns=2)
    assert r.completion_ids == (7, 50, 51, 8, 9)
    assert r.completion_mask == (1, 0, 0, 1, 1)
    assert r.generation_logprobs == (-0.1, 0.0, 0.0, -0.2, -0.3)
    import torch

    plan = MicroBatchPlan(((0,),), width=7)
    batch = build_microbatch([r], torch.zeros(1), plan, 0, overlong_filtering=False)
    assert batch.loss_mask.tolist() == [[0, 1, 0, 0, 1, 1]]


def test_turns_past_the_cap_are_dropped_and_marked_truncated():
    turns = [_turn([1], [7], (-0.1,)), _turn([1, 7, 5], [8], (-0.2,))]
    r = rollout_from_turns(0, turns, 1.0, False, max_turns=1)
    assert r.completion_ids == (7,)
    assert r.truncated is True


def test_non_extending_turn_and_missing_token_ids_are_errors():
    with pytest.raises(ValueError, match="does not extend"):
        rollout_from_turns(0, [_turn([1], [7], (0.0,)), _turn([9], [8], (0.0,))], 1.0, False, 2)
    with pytest.raises(ValueError, match="return_token_id_information"):
        rollout_from_turns(0, [], 1.0, False, 1)


def test_unreachable_finds_dead_ports():
    with socket.socket() as live:
        live.bind(("127.0.0.1", 0))
        live.listen()
        port = live.getsockname()[1]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            dead_port = probe.getsockname()[1]  # bound, not listening: refuses connections
            servers = {
                "up": SimpleNamespace(url=f"http://127.0.0.1:{port}"),
                "down": SimpleNamespace(url=f"http://127.0.0.1:{dead_port}/v1"),
            }
            assert _unreachable(servers) == ["down"]


def _seeds(rows, seed, first_group):
    expanded = expand_rows(rows, num_repeats=3, temperature=1.0, max_tokens=4)
    seed_rows(expanded, seed, first_group)
    return [json.loads(r["responses_create_params"]["metadata"]["extra_body"]) for r in expanded]


def test_every_sample_carries_its_own_seed_in_what_gym_forwards():
    rows = [{"responses_create_params": {"input": "a"}},
            {"responses_create_params": {"input": "b", "metadata": {
                "extra_body": json.dumps({"top_p": 0.5}), "task": "t"}}}]
    seed = step_seed(42, 1)
    extra = _seeds(rows, seed, first_group=4)
    assert [e["seed"] for e in extra] == [sample_seed(seed, 4 + g, i)
                                          for g in range(2) for i in range(3)]
    assert len({e["seed"] for e in extra}) == 6
    assert extra[3]["top_p"] == 0.5  # the row's own extra_body is kept
    assert _seeds(rows, seed, first_group=4) == extra  # a function of (seed, group, index)
    assert rows[1]["responses_create_params"]["metadata"]["task"] == "t"  # rows not modified
    assert "metadata" not in rows[0]["responses_create_params"]
