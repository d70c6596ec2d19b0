"""A tiny random-init causal LM with a character-level tokenizer, built offline.

Why: tests and toy training runs need a real ``transformers`` model that loads with
``AutoModelForCausalLM`` / ``AutoTokenizer`` without Hugging Face Hub access (no egress here).
A character vocabulary keeps the embedding small and lets a toy task (emit a character
pattern, add digits) be learnt in a few dozen GRPO steps on a CPU.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

__all__ = ["CHAT_TEMPLATE", "SPECIAL_TOKENS", "make_tiny_model"]

#: ChatML-style markers; ``<|im_end|>`` is the EOS so generation stops at the end of a turn.
SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "<|im_start|>", "<|im_end|>")

#: Renders chat messages (string contents, or lists of ``{"text": ...}`` parts) as ChatML.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for p in m['content'] %}{{ p['text'] }}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_HEAD_DIM = 64  # rotary kernels and SDPA paths are exercised as in real models at >= 64


def _build_tokenizer(vocab: int) -> Any:
    """A BPE model with no merges is a pure character tokenizer; ``Fuse`` joins on decode."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    # printable ASCII plus newline and tab: every prompt the toy envs send is covered
    symbols = [*SPECIAL_TOKENS, *sorted(set(string.printable) - {"\r", "\x0b", "\x0c"})]
    if vocab < len(symbols):
        msg = f"vocab={vocab!r} is smaller than the {len(symbols)} symbols the tokenizer needs"
        raise ValueError(msg)
    ids = {s: i for i, s in enumerate(symbols)}
    tok = Tokenizer(models.BPE(vocab=ids, merges=[], unk_token="<unk>"))
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="<|im_end|>",
        pad_token="<pad>",
        unk_token="<unk>",
        chat_template=CHAT_TEMPLATE,
        padding_side="left",
    )


def _llama_config(vocab: int, hidden: int, layers: int, tokenizer: Any) -> Any:
    from transformers import LlamaConfig

    if hidden % _HEAD_DIM:
        msg = f"hidden={hidden!r} must be a multiple of the head dim {_HEAD_DIM}"
        raise ValueError(msg)
    return LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=hidden // _HEAD_DIM,
        num_key_value_heads=hidden // _HEAD_DIM,
        head_dim=_HEAD_DIM,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def make_tiny_model(
    out_dir: str | Path,
    *,
    vocab: int = 128,
    hidden: int = 64,
    layers: int = 2,
    seed: int = 0,
) -> Path:
    """Write a random-init ``LlamaForCausalLM`` and its character tokenizer (with a ChatML chat
    template) to ``out_dir``; the same ``seed`` gives identical weights.

    :raises ValueError: when ``vocab`` cannot hold the alphabet or ``hidden`` is not a
        multiple of 64.
    """
    import torch
    from transformers import GenerationConfig, LlamaForCausalLM

    out = Path(out_dir)
    tokenizer = _build_tokenizer(vocab)
    config = _llama_config(vocab, hidden, layers, tokenizer)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
