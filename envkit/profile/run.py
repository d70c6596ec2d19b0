"""``envkit profile`` as one call: sample every row G times, write ``profile.jsonl``, and with a
band, write the curated dataset.

Why atomic: the curated dataset is an input of ``envkit train``; a crash or a Ctrl-C must
never leave a dataset with half its rows.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from typing import TYPE_CHECKING

from envkit.errors import FailedError
from envkit.gym import load_rows
from envkit.model.provenance import PROVENANCE_NAME
from envkit.probe.analysis.observations import rounded
from envkit.probe.phases.model import check_model_dir
from envkit.profile.report import ProfileReport, split_counts
from envkit.profile.sampling import ProfileRequest, sample_profile
from envkit.supply.atomic import make_temp_dir, swap_into_place, write_files, write_text

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from pathlib import Path

    from envkit.gym import Rollout
    from envkit.model.provenance import CurationDict, Provenance
    from envkit.profile.analysis import Band, RowProfile

__all__ = ["DATASET_DIR", "PASS_THRESHOLD", "PROFILE_NAME", "EmptyBandError", "ProfileRequest",
           "pass_threshold_for", "run_profile", "write_curated", "write_profile"]

DATASET_DIR = "dataset"
"""The curated dataset's directory under ``-o``."""
PROFILE_NAME = "profile.jsonl"

PASS_THRESHOLD = 1.0
"""Full marks: a binary verifier's pass (Gym's profile counts ``reward >= pass_threshold``)."""


def pass_threshold_for(package: Path, flag: float | None, *, isolated: bool = False) -> float:
    """``--pass-threshold``, else the configuration's ``profile-pass-threshold``, else full marks.

    :raises SettingsError: the configuration file found cannot be used.
    """
    from envkit.validate.settings import Settings, settings_for

    value = settings_for(package, Settings(profile_pass_threshold=flag),
                         isolated=isolated).profile_pass_threshold
    return PASS_THRESHOLD if value is None else value


class EmptyBandError(FailedError):
    """The band keeps no training row: a dataset without rows would not train."""


def _curation(report: ProfileReport, band: Band) -> CurationDict:
    return {"band": band.to_list(), "pass_threshold": report.pass_threshold,
            "group_size": report.sampled.job.group_size, "seed": report.sampled.job.seed,
            "rows": {split: {"profiled": c["profiled"], "kept": c["kept"]}
                     for split, c in split_counts(report.rows, report.kept).items()},
            "zero_variance_share_before": rounded(report.zero_variance_before),
            "zero_variance_share_after": rounded(report.zero_variance_after)}


def run_profile(request: ProfileRequest, *, band: Band | None = None,
                out_dir: Path | None = None,
                on_result: Callable[[Rollout], None] | None = None) -> ProfileReport:
    """Profile the dataset; write ``profile.jsonl`` and, with ``band``, ``DATASET_DIR`` under
    ``out_dir``.

    :raises ModelDirError: ``request.model`` has no ``config.json`` (before any bring-up).
    :raises EmptyBandError: ``band`` keeps no training row (``profile.jsonl`` is written).
    """
    check_model_dir(request.model)
    sampled = sample_profile(request, on_result)
    report = ProfileReport(str(request.model), request.backend, request.pass_threshold, sampled,
                           band)
    if out_dir is None:
        return report
    report = dataclasses.replace(report, profile_path=write_profile(out_dir, sampled.rows))
    if band is None or report.exit_code:
        return report
    kept = report.kept
    if not any(r.split == "training" for r in kept):
        msg = (f"--keep {band.low},{band.high} keeps none of the "
               f"{sum(r.split == 'training' for r in report.rows)} training rows (their pass "
               f"rates are in {report.profile_path}); widen the band or lower --pass-threshold")
        raise EmptyBandError(msg)
    indices = {split: [r.index for r in kept if r.split == split]
               for split in dict.fromkeys(r.split for r in report.rows)}
    # an empty validation.jsonl is no split at all: leave the file out (it is optional)
    indices = {s: rows for s, rows in indices.items() if rows or s == "training"}
    from envkit.supply.provenance import run_record

    record = run_record(request.package, request.dataset, request.job)
    dest = write_curated(out_dir / DATASET_DIR, request.dataset, indices,
                         dataclasses.replace(record, curation=_curation(report, band)))
    return dataclasses.replace(report, dataset_path=dest)


def write_profile(out_dir: Path, rows: Iterable[RowProfile]) -> Path:
    """``out_dir/profile.jsonl``: one line per row, in dataset order, whole or not at all."""
    text = "".join(json.dumps(row.to_dict()) + "\n" for row in rows)
    return write_text(out_dir / PROFILE_NAME, text)


def write_curated(dest: Path, source: Path, kept: Mapping[str, Iterable[int]],
                  provenance: Provenance) -> Path:
    """``dest`` as a dataset: each split's kept rows of ``source``, and ``provenance.json``; an
    existing ``dest`` is replaced in one step.

    :raises OSError: the source cannot be read or ``dest`` not written.
    """
    files: dict[str, Path | bytes] = {PROVENANCE_NAME: provenance.dumps().encode()}
    for split, indices in kept.items():
        rows = load_rows(source, split)
        text = "".join(json.dumps(rows[i], ensure_ascii=False) + "\n" for i in indices)
        files[f"{split}.jsonl"] = text.encode()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(dest)
    try:
        write_files(tmp, files)
        swap_into_place(tmp, dest)
    finally:  # gone after a swap; a half-written one after a failure
        shutil.rmtree(tmp, ignore_errors=True)
    return dest
