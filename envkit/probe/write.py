"""``envkit probe -o DIR``: the JSON report and the PNG, written atomically into DIR.

matplotlib is imported only here, when asked: the probe runs on the base install, and without
matplotlib the PNG is skipped with a note.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.errors import MissingExtraError
from envkit.supply.atomic import write_text
from envkit.supply.provenance import run_record, write_provenance

if TYPE_CHECKING:
    from envkit.probe.report import ProbeReport

__all__ = ["JSON_NAME", "PNG_NAME", "PlotUnavailableError", "write_outputs", "write_png"]

log = logging.getLogger(__name__)

JSON_NAME = "probe.json"
PNG_NAME = "probe.png"


def write_outputs(report: ProbeReport, directory: Path) -> ProbeReport:
    """``DIR/probe.png``, ``DIR/probe.json``; the report returned names the PNG."""
    directory.mkdir(parents=True, exist_ok=True)
    png = directory / PNG_NAME
    try:
        write_png(report, png)
        report = replace(report, png=str(png))
    except PlotUnavailableError as exc:
        log.warning("%s", exc)
        report = replace(report, notes=(*report.notes, str(exc)))
    write_text(directory / JSON_NAME, json.dumps(report.to_dict(), indent=2) + "\n")
    _write_provenance(report, directory)
    return report


def _write_provenance(report: ProbeReport, directory: Path) -> None:
    """``DIR/provenance.json``: what the probe ran on (best effort: the report is the result)."""
    package, dataset, job = Path(report.package), report.dataset, report.job
    try:
        if package.is_dir():
            write_provenance(directory, run_record(
                package, Path(dataset) if dataset else None,
                Path(job.source) if job is not None and job.source != "defaults" else None))
    except OSError as exc:
        log.warning("provenance.json not written: %s", exc)


class PlotUnavailableError(MissingExtraError, RuntimeError):
    """matplotlib is not installed: no PNG."""


def _rewards(ax: Any, agents: list[dict[str, Any]]) -> None:
    names = [p["policy"] for p in agents[0]["policies"]] if agents else []
    width = 0.8 / max(len(agents), 1)
    for i, agent in enumerate(agents):
        means = {p["policy"]: p["mean"] for p in agent["policies"]}
        xs = [j + i * width for j in range(len(names))]
        ax.bar(xs, [means.get(n) or 0.0 for n in names], width, label=agent["agent"])
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(names))], names, rotation=60,
                  ha="right", fontsize=7)
    ax.set_ylabel("mean reward")
    ax.set_title("reward per policy")
    if agents:
        ax.legend(fontsize=7)


def _load(ax: Any, load: dict[str, Any] | None) -> None:
    levels = (load or {}).get("levels") or []
    xs = [lv["concurrency"] for lv in levels]
    for key, style in (("p50_s", "o-"), ("p95_s", "s--"), ("p99_s", "^:")):
        ax.plot(xs, [lv[key] for lv in levels], style, label=key.removesuffix("_s"))
    ax.set_xlabel("rollouts in flight")
    ax.set_ylabel("latency (s)")
    ax.set_title("load")
    twin = ax.twinx()
    twin.plot(xs, [lv["throughput_rps"] for lv in levels], "k.-", label="throughput")
    twin.set_ylabel("rollouts / s")
    if xs:
        ax.set_xscale("log", base=2)
        ax.legend(fontsize=7, loc="upper left")


def write_png(report: ProbeReport, png: Path) -> Path:
    """Draw ``report`` into ``png``.

    :raises PlotUnavailableError: matplotlib is missing.
    """
    try:
        import matplotlib as mpl
    except ImportError:
        msg = ("matplotlib is not installed: probe.png skipped (pip install "
               "'nemo-envkit[platform]' draws it)")
        raise PlotUnavailableError(msg) from None
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    data = report.to_dict()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    _rewards(left, data["agents"])
    _load(right, data["load"])
    fig.suptitle(f"envkit probe: {data['package']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png
