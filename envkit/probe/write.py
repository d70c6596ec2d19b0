"""``envkit probe -o DIR``: the JSON report and the PNG, written atomically into DIR."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from envkit.probe.plot import PlotUnavailableError, write_png
from envkit.supply.atomic import write_text

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.probe.report import ProbeReport

__all__ = ["JSON_NAME", "PNG_NAME", "write_outputs"]

log = logging.getLogger(__name__)

JSON_NAME = "probe.json"
PNG_NAME = "probe.png"


def write_outputs(report: ProbeReport, directory: Path) -> ProbeReport:
    """``DIR/probe.png`` (skipped, with a note, without matplotlib) and ``DIR/probe.json``;
    the report returned names the PNG."""
    directory.mkdir(parents=True, exist_ok=True)
    png = directory / PNG_NAME
    try:
        write_png(report, png)
        report = replace(report, png=str(png))
    except PlotUnavailableError as exc:
        log.warning("%s", exc)
        report = replace(report, notes=(*report.notes, str(exc)))
    write_text(directory / JSON_NAME, json.dumps(report.to_dict(), indent=2) + "\n")
    return report
