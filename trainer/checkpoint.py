"""Checkpoints: everything a resumed run needs to continue bit-for-bit, written atomically.

Why atomic: a run killed mid-save must leave the previous checkpoint as the latest, never a
half-written one; the directory is built under a temp name, then renamed (as ``envkit build``
does for packages). ``keep_top_k`` ranks by ``val_accuracy`` when present, else
``train_reward``; the latest checkpoint is always kept so ``--resume`` can continue.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from envkit.trainer.sampler import SamplerState

__all__ = ["Checkpoint", "latest_checkpoint", "load_checkpoint", "prune", "save_checkpoint"]

_STATE = "trainer_state.pt"
_META = "meta.json"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    step: int
    path: Path
    metric: float | None


def _trainable_state(model: Any) -> dict[str, torch.Tensor]:
    """Only what the optimizer changes: the LoRA adapter, or every weight for full FT."""
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    return {k: v.detach().clone() for k, v in model.state_dict().items() if k in names}


def save_checkpoint(
    root: Path,
    step: int,
    policy: Any,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    sampler: SamplerState,
    metric: float | None,
) -> Checkpoint:
    """Write ``root/step_<n>/`` (policy dir + trainer state) atomically."""
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step:06d}"
    tmp = Path(tempfile.mkdtemp(prefix=f".step_{step:06d}.", dir=root))
    try:
        policy.save(tmp / "policy")
        state = {
            "model": _trainable_state(policy.model),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "sampler": asdict(sampler),
            "torch_rng": torch.get_rng_state(),
        }
        torch.save(state, tmp / _STATE)
        (tmp / _META).write_text(json.dumps({"step": step, "metric": metric}), encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Checkpoint(step, final, metric)


def _listing(root: Path) -> list[Checkpoint]:
    found = []
    for meta in root.glob(f"step_*/{_META}"):
        data = json.loads(meta.read_text(encoding="utf-8"))
        found.append(Checkpoint(int(data["step"]), meta.parent, data.get("metric")))
    return sorted(found, key=lambda c: c.step)


def latest_checkpoint(root: Path) -> Checkpoint | None:
    found = _listing(root)
    return found[-1] if found else None


def load_checkpoint(
    ckpt: Checkpoint, policy: Any, optimizer: torch.optim.Optimizer, scheduler: Any
) -> SamplerState:
    """Restore weights, optimizer moments and RNG in place; returns the data cursor."""
    state = torch.load(ckpt.path / _STATE, weights_only=False)
    missing = set(state["model"]) - set(policy.model.state_dict())
    if missing:
        msg = f"checkpoint {ckpt.path} does not match the model: {sorted(missing)[:3]!r}"
        raise ValueError(msg)
    policy.model.load_state_dict(state["model"], strict=False)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    return SamplerState(**state["sampler"])


def prune(root: Path, keep_top_k: int | None) -> list[Path]:
    """Delete all but the best ``keep_top_k`` and the latest; returns what was removed."""
    found = _listing(root)
    if keep_top_k is None or len(found) <= keep_top_k:
        return []
    ranked = sorted(found, key=lambda c: (c.metric is not None, c.metric or 0.0, c.step))
    keep = {c.path for c in ranked[-keep_top_k:]} | {found[-1].path}
    removed = [c.path for c in found if c.path not in keep]
    for path in removed:
        # rename first: a kill mid-delete leaves a hidden dir, never a half-deleted step_*
        doomed = path.with_name(f".pruned-{path.name}")
        path.rename(doomed)
        shutil.rmtree(doomed)
    for stale in root.glob(".pruned-*"):
        shutil.rmtree(stale, ignore_errors=True)
    return removed
