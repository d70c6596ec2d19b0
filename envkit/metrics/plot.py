"""The reward-curve PNG, drawn the same way for a local ``envkit train`` run and a platform job.

One code path on purpose: a user compares a laptop run with a cluster run by looking at two
images. matplotlib is imported lazily: most commands never plot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["reward_curve"]


def reward_curve(records: list[dict[str, Any]], png: Path) -> Path | None:
    """Plot ``train_reward`` (line) and ``val_accuracy`` (dots) by step; None when neither.

    :raises ImportError: matplotlib is missing (it ships in the ``train`` and ``platform`` extras).
    """
    train = [(r["step"], r["train_reward"]) for r in records if "train_reward" in r]
    val = [(r["step"], r["val_accuracy"]) for r in records if "val_accuracy" in r]
    if not train and not val:
        return None
    import matplotlib as mpl

    mpl.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    if train:
        ax.plot(*zip(*train, strict=True), label="train_reward")
    if val:
        ax.plot(*zip(*val, strict=True), "o-", label="val_accuracy")
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    ax.legend()
    fig.savefig(png, dpi=80)
    plt.close(fig)
    return png
