"""The worker extension vLLM mixes into its workers: envkit's weight refit, run where the model is.

Why ``collective_rpc``: vLLM V1 may run its workers in processes of their own; a worker method
(``LLM(worker_extension_cls=...)``) is the supported way to the model, with no insecure pickling.

Why stage, then commit: buckets of weights (``envkit_stage``) wait beside the model; only
``envkit_commit`` loads them, and only when the staged names are exactly the ones the driver
validated. It loads through the worker's ``reload_weights`` (checkpoint format): the model's own
``load_weights`` (fused qkv / gate-up names, tied embeddings), then each layer's
``process_weights_after_loading`` again (on CPU vLLM repacks linear weights after loading).

Imported by name inside vLLM's worker process: it imports nothing from envkit.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RefitExtension", "copy_bucket", "pack_bucket", "unpack_bucket"]

#: One packed weight: name, dtype name (``float32``), shape, raw bytes (C order); or, for a
#: worker in the sender's own process, name and tensor (:func:`copy_bucket`).
Packed = tuple[str, str, list[int], bytes] | tuple[str, Any]


def pack_bucket(weights: list[tuple[str, Any]]) -> list[Packed]:
    """Tensors -> plain msgpack values (vLLM's RPC decodes arguments without type hints, so a
    tensor argument would arrive as a bare list; bytes arrive as bytes)."""
    import torch

    packed: list[Packed] = []
    for name, tensor in weights:
        flat = tensor.detach().to("cpu").contiguous()
        raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        packed.append((name, str(flat.dtype).removeprefix("torch."), list(flat.shape), raw))
    return packed


def copy_bucket(weights: list[tuple[str, Any]]) -> list[Packed]:
    """Tensors for a worker in this process (vLLM on CPU): ``collective_rpc`` then calls the
    worker directly, with no message to encode, so one copy per tensor is enough (never the
    trainer's own tensors: the engine must not see them change), where bytes cost two."""
    return [(name, tensor.detach().to("cpu", copy=True).contiguous()) for name, tensor in weights]


def unpack_bucket(packed: list[Packed]) -> dict[str, Any]:
    """:func:`pack_bucket`'s (or :func:`copy_bucket`'s) values -> tensors (their own memory,
    on CPU)."""
    import torch

    out = {}
    for item in packed:
        if len(item) == 2:  # copy_bucket's: already a tensor of its own
            out[item[0]] = item[1]
            continue
        name, dtype, shape, raw = item
        kind = getattr(torch, dtype)
        if not isinstance(kind, torch.dtype):
            msg = f"weight {name!r} has an unknown dtype {dtype!r}"
            raise TypeError(msg)
        data = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0)
        out[name] = data.view(kind).reshape(shape) if raw else torch.empty(shape, dtype=kind)
    return out


def _repack_embeddings(model: Any) -> None:
    """Re-run the embedding layers' after-load processing.

    Why: on CPU an embedding layer keeps a packed copy of its weight (a tied ``lm_head`` packs
    ``embed_tokens.weight`` on its own), which a reload does not refresh: the logits would still
    come from the old embedding. Packing only adds the copy, so running it again is exact.
    """
    from vllm.model_executor.layers.vocab_parallel_embedding import UnquantizedEmbeddingMethod

    for module in model.modules():
        method = getattr(module, "quant_method", None)
        if isinstance(method, UnquantizedEmbeddingMethod):
            method.process_weights_after_loading(module)


class RefitExtension:
    """Methods vLLM adds to its worker class (``self`` is the worker)."""

    _envkit_staged: dict[str, Any]

    def envkit_stage(self, bucket: list[Packed]) -> int:
        """Keep a bucket of checkpoint-format weights (:func:`pack_bucket`) for the next
        commit; touches nothing the engine uses. Returns how many are staged so far."""
        staged = self.__dict__.setdefault("_envkit_staged", {})
        staged.update(unpack_bucket(bucket))
        return len(staged)

    def envkit_discard(self) -> None:
        """Drop what was staged (a refit the driver abandoned)."""
        self.__dict__["_envkit_staged"] = {}

    def envkit_commit(self, names: list[str]) -> int:
        """Load the staged weights, all at once; returns how many were loaded.

        :raises RuntimeError: the staged names are not exactly ``names`` (nothing is touched).
        """
        staged = self.__dict__.get("_envkit_staged", {})
        self.__dict__["_envkit_staged"] = {}
        if set(staged) != set(names):
            missing = sorted(set(names) - set(staged))[:5]
            extra = sorted(set(staged) - set(names))[:5]
            msg = f"staged weights differ from the checked list (missing {missing}, extra {extra})"
            raise RuntimeError(msg)
        weights = [(name, staged[name]) for name in names]
        self.reload_weights(weights_iterator=iter(weights), is_checkpoint_format=True)  # type: ignore[attr-defined]
        _repack_embeddings(self.model_runner.model)  # type: ignore[attr-defined]
        return len(weights)
