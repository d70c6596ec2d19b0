from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from envkit.trainer.tiny_model import make_tiny_model


def test_tiny_model_loads_offline_and_renders_chat(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = make_tiny_model(tmp_path / "m", seed=3)
    model = AutoModelForCausalLM.from_pretrained(out)
    tok = AutoTokenizer.from_pretrained(out)
    text = tok.apply_chat_template(
        [{"role": "user", "content": "1+2="}], tokenize=False, add_generation_prompt=True
    )
    assert text == "<|im_start|>user\n1+2=<|im_end|>\n<|im_start|>assistant\n"
    ids = tok(text).input_ids
    assert tok.decode(ids) == text
    assert model.config.head_dim >= 64
    assert tok.eos_token == "<|im_end|>"


def test_same_seed_same_weights(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    a = AutoModelForCausalLM.from_pretrained(make_tiny_model(tmp_path / "a", seed=1))
    b = AutoModelForCausalLM.from_pretrained(make_tiny_model(tmp_path / "b", seed=1))
    for (_, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_rejects_bad_sizes(tmp_path):
    with pytest.raises(ValueError, match="head dim"):
        make_tiny_model(tmp_path / "x", hidden=96)
    with pytest.raises(ValueError, match="smaller"):
        make_tiny_model(tmp_path / "y", vocab=10)
