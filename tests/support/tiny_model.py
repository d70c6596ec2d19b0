"""A throwaway random-init char model for tests (the trainer branch owns the real maker)."""

from __future__ import annotations

import json
import string
from pathlib import Path

__all__ = ["make_tiny_char_model"]

_ALPHABET = string.printable


def make_tiny_char_model(dest: Path, *, seed: int = 0) -> Path:
    """LlamaForCausalLM (head dim 64) + character tokenizer, saved as an HF model dir."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<eos>", "<unk>"]
    vocab = {tok: i for i, tok in enumerate([*specials, *dict.fromkeys(_ALPHABET)])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tok.decoder = decoders.Fuse()  # characters join back without spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                   unk_token="<unk>")
    fast.save_pretrained(dest)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
                         max_position_embeddings=256, pad_token_id=0, eos_token_id=1,
                         bos_token_id=None, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(dest)
    (dest / "envkit-tiny.json").write_text(json.dumps({"seed": seed}))
    return dest
