"""Refit planning and the probe check, without an engine: every name, shape and value of the new
weights is checked before anything is sent, and the probe refuses an engine that scores
differently from the trainer."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from envkit.trainer.generation.refit import (
    ProbeCheck,
    RefitError,
    check_probe,
    plan_refit,
    probe_tolerance,
    safetensors_layout,
)
from envkit.trainer.generation.vllm import buckets, tied_names
from envkit.trainer.generation.vllm_worker import copy_bucket, pack_bucket, unpack_bucket

LAYOUT = {"model.embed_tokens.weight": (4, 2), "model.norm.weight": (2,)}
TIED = ("lm_head.weight", "model.embed_tokens.weight")


def _state():
    embed = torch.arange(8.0).reshape(4, 2)
    return {"model.embed_tokens.weight": embed, "lm_head.weight": embed,
            "model.norm.weight": torch.ones(2)}


def test_a_tied_head_equal_to_the_embedding_is_not_sent():
    plan = plan_refit(_state(), LAYOUT, tied=TIED)
    assert [name for name, _ in plan] == list(LAYOUT)


def test_every_problem_is_reported_at_once_and_nothing_is_planned():
    state = _state()
    state["lm_head.weight"] = torch.zeros(4, 2)
    state["model.norm.weight"] = torch.ones(3)
    state["model.extra.weight"] = torch.ones(1)
    state["model.embed_tokens.weight"] = torch.full((4, 2), math.nan)
    del state["model.norm.weight"]
    state["model.norm.weight"] = torch.ones(3)
    with pytest.raises(RefitError) as err:
        plan_refit(state, {**LAYOUT, "model.missing.weight": (1,)}, tied=TIED)
    msg = str(err.value)
    assert "the engine keeps the previous ones" in msg
    for part in ("lm_head.weight differs from model.embed_tokens.weight",
                 "unknown to the engine: model.extra.weight", "missing: model.missing.weight",
                 "model.norm.weight has shape (3,), the engine's is (2,)",
                 "model.embed_tokens.weight has NaN or infinite values"):
        assert part in msg


def test_integer_weights_are_refused():
    state = {**_state(), "model.norm.weight": torch.ones(2, dtype=torch.long)}
    with pytest.raises(RefitError, match="not a floating point tensor"):
        plan_refit(state, LAYOUT, tied=TIED)


def test_an_untied_head_must_be_in_the_layout():
    with pytest.raises(RefitError, match=r"unknown to the engine: lm_head\.weight"):
        plan_refit(_state(), LAYOUT, tied=None)


def test_the_probe_accepts_rounding_and_refuses_a_stale_engine():
    expected = ProbeCheck((1, 2, 3), (-1.0, -2.0))
    metrics = check_probe(expected, [-1.0000005, -2.0], probe_tolerance("float32"))
    assert metrics["refit_probe_max_abs_logprob_diff"] < 1e-6
    assert metrics["refit_probe_mult_prob_error"] == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(RefitError, match=r"token 2 of 2 by 0\.3"):
        check_probe(expected, [-1.0, -2.3], probe_tolerance("float32"))
    with pytest.raises(RefitError):
        check_probe(expected, [-1.0, math.nan], probe_tolerance("bfloat16"))
    with pytest.raises(RefitError, match="scored 1 probe tokens"):
        check_probe(expected, [-1.0], 1.0)


def test_safetensors_layout_reads_names_and_shapes(tmp_path: Path):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=16, hidden_size=64, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=1, num_key_value_heads=1, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    layout = safetensors_layout(tmp_path)
    assert layout["model.embed_tokens.weight"] == (16, 64)
    assert "lm_head.weight" not in layout  # tied: stored once
    assert tied_names(tmp_path) == TIED
    (tmp_path / "bad.safetensors").write_bytes(b"\xff" * 8)
    with pytest.raises(RefitError, match="not a safetensors file"):
        safetensors_layout(tmp_path)
    with pytest.raises(RefitError, match=r"no \*\.safetensors"):
        safetensors_layout(tmp_path / "none")


def test_buckets_bound_each_message_and_pack_round_trips():
    weights = [(f"w{i}", torch.randn(8, 8)) for i in range(5)]  # 256 bytes each
    cut = buckets(weights, limit=600)
    assert [len(b) for b in cut] == [2, 2, 1]
    half = torch.randn(3, 2).to(torch.bfloat16)
    packed = pack_bucket([*weights, ("h", half), ("empty", torch.empty(0, 4))])
    back = unpack_bucket(packed)
    for name, tensor in [*weights, ("h", half)]:
        assert torch.equal(back[name], tensor) and back[name].dtype == tensor.dtype
    assert back["empty"].shape == (0, 4)


def test_copied_buckets_are_the_weights_in_memory_of_their_own() -> None:
    """A worker in the trainer's process gets copies, never the trainer's tensors."""
    weights = [("a", torch.randn(3, 4)), ("b", torch.randn(5).half()), ("t", torch.randn(4, 3).t())]
    back = unpack_bucket(copy_bucket(weights))
    for name, tensor in weights:
        assert back[name].equal(tensor) and back[name].dtype == tensor.dtype
        assert back[name].is_contiguous()
        assert back[name].untyped_storage().data_ptr() != tensor.untyped_storage().data_ptr()
