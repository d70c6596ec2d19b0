"""A job's ``status_details.metrics`` as the records a local ``envkit train`` run writes.

The platform keeps one series per name; ``metrics.jsonl`` holds one object per step, as a
local run does, so one plotting path and one reader serve both.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from envkit.supply.atomic import write_text

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["latest", "metrics_records", "write_metrics"]


def metrics_records(status: dict[str, Any]) -> list[dict[str, Any]]:
    """Merge every series by step, in step order (``epoch`` dropped: a local run has none)."""
    series = ((status.get("status_details") or {}).get("metrics")) or {}
    by_step: dict[int, dict[str, Any]] = {}
    for name, points in series.items() if isinstance(series, dict) else ():
        for point in points if isinstance(points, list) else ():
            if not isinstance(point, dict) or "step" not in point or "value" not in point:
                continue
            record = by_step.setdefault(int(point["step"]), {"step": int(point["step"])})
            record[name] = point["value"]
    return [by_step[s] for s in sorted(by_step)]


def latest(records: list[dict[str, Any]], name: str) -> Any:
    values = [r[name] for r in records if name in r]
    return values[-1] if values else None


def write_metrics(records: list[dict[str, Any]], out_dir: Path) -> Path:
    """Write ``metrics.jsonl`` atomically (a reader never sees half a file)."""
    return write_text(out_dir / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in records))
