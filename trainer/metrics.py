"""Step metrics under NeMo-RL's names: ``metrics.jsonl``, TensorBoard scalars, a reward PNG.

Why these names: users read an envkit run with the same dashboards and the same advice
(the "GRPO and Reward Environments" guide "Read the results") as a platform ``rl`` job:
``train_reward`` is the headline, ``val_accuracy`` is the validation pass's mean reward.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from envkit.metrics.plot import reward_curve as _plot

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["MetricsLogger", "read_metrics"]


class MetricsLogger:
    """Appends one JSON object per step; mirrors scalars to TensorBoard when available."""

    def __init__(self, out_dir: Path) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.path = out_dir / "metrics.jsonl"
        self._png = out_dir / "reward_curve.png"
        self._writer = _tensorboard(out_dir / "tensorboard")

    def log(self, step: int, values: dict[str, float]) -> None:
        record = {"step": step, **values}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        if self._writer is not None:
            for name, value in values.items():
                self._writer.add_scalar(name, value, step)
            self._writer.flush()

    def truncate_after(self, step: int) -> None:
        """Drop records past ``step``: a resumed run rewrites what the killed one logged."""
        if not self.path.exists():
            return
        kept = [r for r in read_metrics(self.path) if r["step"] <= step]
        self.path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")

    def close(self) -> Path | None:
        """Flush TensorBoard and draw ``reward_curve.png``; returns the PNG path."""
        if self._writer is not None:
            self._writer.close()
        return _plot(read_metrics(self.path), self._png)


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Records in step order; a torn last line is dropped.

    Why: a run killed (SIGKILL, OOM) mid-``write`` leaves a partial final line without its
    newline; ``--resume`` must read past it (``truncate_after`` then rewrites the file).
    """
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    torn = bool(lines) and not text.endswith("\n")
    records = []
    for index, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if torn and index == len(lines) - 1:
                break
            raise
    return records


def _tensorboard(log_dir: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is in the `train` extra, not a hard requirement
        return None
    return SummaryWriter(log_dir=str(log_dir))
