"""``envkit probe -o DIR``: the JSON report and the PNG, written atomically into DIR."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.probe.plot import PlotUnavailableError, write_png
from envkit.supply.atomic import write_text
from envkit.supply.provenance import run_record, write_provenance

if TYPE_CHECKING:
    from envkit.probe.analysis.job import ProbeJob
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
    _write_provenance(report, directory)
    return report


def _write_provenance(report: ProbeReport, directory: Path) -> None:
    """``DIR/provenance.json``: what the probe ran on (best effort: the report is the result)."""
    package, dataset = Path(report.package), report.dataset
    try:
        if package.is_dir():
            write_provenance(directory, run_record(package, Path(dataset) if dataset else None,
                                                   _job_file(report.job)))
    except OSError as exc:
        log.warning("provenance.json not written: %s", exc)


def _job_file(job: ProbeJob | None) -> Path | None:
    return Path(job.source) if job is not None and job.source != "defaults" else None
