"""``envkit profile``'s pure analysis: pass rate, spread, the band and the zero-variance share,
worked out by hand; the report, the curated dataset on disk and the CLI's refusals."""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import json
from typing import TYPE_CHECKING

import pytest
from jsonschema import Draft202012Validator

from envkit.cli import main
from envkit.model.provenance import parse_provenance
from envkit.probe.analysis.job import ProbeJob
from envkit.profile import Band, BandError, ProfileReport, parse_band
from envkit.profile.analysis import kept_rows, row_profile, zero_variance_share
from envkit.profile.report import split_counts
from envkit.profile.run import write_curated, write_profile
from envkit.profile.sampling import Sampled
from envkit.schemas import load_schema

if TYPE_CHECKING:
    from pathlib import Path

JOB = ProbeJob(concurrency=4, rollouts_per_step=16, max_new_tokens=8, temperature=1.0,
               group_size=4, source="job.json", seed=7)


@pytest.mark.parametrize("name", ["envkit.profile.analysis", "envkit.output.profile"])
def test_doctests(name: str) -> None:
    failed, attempted = doctest.testmod(importlib.import_module(name))
    assert attempted > 0 and failed == 0


def test_pass_rate_counts_rewards_at_or_over_the_threshold() -> None:
    row = row_profile("training", 3, [0.0, 0.125, 0.5, 1.0], pass_threshold=0.5)
    assert (row.pass_rate, row.mean) == (0.5, 0.40625)
    assert row.std == pytest.approx(0.3891, abs=1e-4)  # sqrt(0.60547 / 4): population std
    assert row_profile("training", 3, [0.0, 0.125, 0.5, 1.0]).pass_rate == 0.25  # default 1.0


def test_a_failed_rollout_is_no_reward() -> None:
    row = row_profile("validation", 0, [1.0, 0.0], ["timeout", "server died"])
    assert (row.samples, row.failed, row.pass_rate, row.first_failure) == (4, 2, 0.5, "timeout")
    dead = row_profile("training", 1, [], ["timeout"])
    assert (dead.pass_rate, dead.mean, dead.std) == (None, None, None)
    assert dead.to_dict()["min"] is None


def test_the_row_line_has_every_key_the_schema_names() -> None:
    schema = load_schema("profile")
    row = row_profile("training", 0, [1.0, 0.0]).to_dict()
    Draft202012Validator(schema["$defs"]["row"]).validate(row)
    assert set(row) == set(schema["$defs"]["row"]["properties"])


@pytest.mark.parametrize(("text", "band"), [("0.1,0.9", Band(0.1, 0.9)), (" 0 , 1 ", Band(0, 1)),
                                            ("0.5,0.5", Band(0.5, 0.5))])
def test_band_parses(text: str, band: Band) -> None:
    assert parse_band(text) == band


@pytest.mark.parametrize("text", ["0.9,0.1", "0.1", "a,b", "-0.1,0.5", "0.2,1.5", "0.1,0.2,0.3",
                                  "nan,0.5"])
def test_a_bad_band_is_a_usage_error(text: str) -> None:
    with pytest.raises(BandError, match="--keep"):
        parse_band(text)


def test_the_band_keeps_rows_inside_it_both_ends_included() -> None:
    rows = [row_profile("training", i, r) for i, r in
            enumerate([[1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0], [1, 1, 0, 0]])]
    assert [r.index for r in kept_rows(rows, Band(0.25, 0.75))] == [1, 2, 4]
    assert [r.index for r in kept_rows(rows, Band(0.5, 0.5))] == [4]
    unscored = row_profile("training", 5, [], ["timeout"])
    assert kept_rows([unscored], Band(0.0, 1.0)) == []


def test_zero_variance_share_is_the_share_of_groups_that_all_scored_alike() -> None:
    rows = [row_profile("training", 0, [0.0, 0.0, 0.0]),       # alike: no gradient
            row_profile("training", 1, [0.5, 0.5, 0.5]),       # alike at a partial reward
            row_profile("training", 2, [0.0, 0.125, 0.0]),     # differs
            row_profile("training", 3, [1.0]),                 # one scored reply: alike
            row_profile("training", 4, [], ["timeout"])]       # nothing scored: no group
    assert zero_variance_share(rows) == 3 / 4
    assert zero_variance_share([]) is None


def test_keeping_the_middle_band_lowers_the_zero_variance_share() -> None:
    rows = [row_profile("training", i, r) for i, r in
            enumerate([[0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0], [1, 1, 0, 1]])]
    kept = kept_rows(rows, Band(0.1, 0.9))
    assert (zero_variance_share(rows), zero_variance_share(kept)) == (0.5, 0.0)


def _report(band: Band | None, tmp_path: Path | None = None) -> ProfileReport:
    rows = (row_profile("training", 0, [0.0] * 4), row_profile("training", 1, [1, 0, 1, 0]),
            row_profile("training", 2, [1.0] * 4), row_profile("validation", 0, [0, 0, 1, 0]))
    return ProfileReport("model", "hf", 1.0, Sampled(JOB, rows, 1.5, 2.5), band,
                         profile_path=tmp_path / "profile.jsonl" if tmp_path else None)


def test_the_report_counts_before_and_after_the_band() -> None:
    report = _report(Band(0.1, 0.9))
    data = report.to_dict()
    Draft202012Validator(load_schema("profile")).validate(data)
    assert data["zero_variance_share"] == 0.5
    assert data["keep"] == {"band": [0.1, 0.9], "zero_variance_share_after": 0.0, "dataset": None,
                            "rows": {"training": {"profiled": 3, "kept": 1},
                                     "validation": {"profiled": 1, "kept": 1}}}
    assert (data["rollouts"], data["job"]["group_size"], report.exit_code) == (16, 4, 0)
    assert split_counts(report.rows, []) == {"training": {"profiled": 3, "kept": 0},
                                             "validation": {"profiled": 1, "kept": 0}}


def test_a_failed_rollout_fails_the_run() -> None:
    rows = (row_profile("training", 0, [1.0, 0.0], ["timeout"]),)
    assert ProfileReport("m", "hf", 1.0, Sampled(JOB, rows, 0, 0)).exit_code == 1


def test_profile_jsonl_is_one_row_a_line_in_order(tmp_path: Path) -> None:
    path = write_profile(tmp_path / "out", _report(None).rows)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(d["split"], d["index"], d["pass_rate"]) for d in lines] == [
        ("training", 0, 0.0), ("training", 1, 0.5), ("training", 2, 1.0), ("validation", 0, 0.25)]


def test_the_curated_dataset_holds_the_kept_rows_and_its_provenance(tmp_path: Path) -> None:
    from envkit.model.provenance import Provenance

    source = tmp_path / "data"
    source.mkdir()
    (source / "training.jsonl").write_text("".join(json.dumps({"n": i, "é": "x"}) + "\n"
                                                   for i in range(4)))
    curation = {"band": [0.1, 0.9], "pass_threshold": 1.0, "group_size": 4, "seed": 7,
                "rows": {"training": {"profiled": 4, "kept": 2}},
                "zero_variance_share_before": 0.5, "zero_variance_share_after": 0.0}
    record = Provenance("0", dataset_sha256="ab" * 32, curation=curation)  # type: ignore[arg-type]
    dest = tmp_path / "out" / "dataset"
    dest.mkdir(parents=True)
    (dest / "stale.jsonl").write_text("old\n")  # what was there is replaced whole
    write_curated(dest, source, {"training": [1, 3]}, record)
    assert sorted(p.name for p in dest.iterdir()) == ["provenance.json", "training.jsonl"]
    assert [json.loads(x)["n"] for x in (dest / "training.jsonl").read_text().splitlines()] \
        == [1, 3]
    raw = (dest / "provenance.json").read_bytes()
    Draft202012Validator(load_schema("provenance")).validate(json.loads(raw))
    doc = parse_provenance(raw)
    assert doc.record is not None and doc.record.curation == curation
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["dataset"]  # no temp dir left


def test_human_output_prints_the_share_before_and_after(capsys: pytest.CaptureFixture) -> None:
    from envkit.output.render import render

    assert render(_report(Band(0.1, 0.9)), "human") == 0
    out = capsys.readouterr().out
    assert "zero-variance share 50% -> 0%" in out
    assert "training 1/3, validation 1/1" in out


def test_keep_without_an_output_directory_is_a_usage_error(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    args = ["profile", str(tmp_path), "--dataset", str(tmp_path), "--model", str(tmp_path)]
    assert main([*args, "--keep", "0.1,0.9"]) == 2
    assert "give -o DIR" in capsys.readouterr().err
    assert main([*args, "--keep", "0.9,0.1", "-o", str(tmp_path / "o")]) == 2
    assert "LOW <= HIGH" in capsys.readouterr().err


def test_help_ends_with_an_example(capsys: pytest.CaptureFixture) -> None:
    assert main(["profile", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert help_text.rstrip().endswith("-o profile-out --keep 0.1,0.9")


def test_every_rollout_is_seeded_by_its_row_and_place_in_the_group() -> None:
    pytest.importorskip("torch")  # the trainer's seeding lives beside its Gym source
    from envkit.probe.phases.model import seeded_batch
    from envkit.profile.sampling import PROFILE_SALT

    splits = {"training": [{"q": 1}, {"q": 2}], "validation": [{"q": 3}]}
    batch, owners = seeded_batch(splits, JOB, PROFILE_SALT)
    again, _ = seeded_batch(splits, JOB, PROFILE_SALT)
    seeds = [json.loads(r["responses_create_params"]["metadata"]["extra_body"])["seed"]
             for r in batch]
    assert batch == again  # the same job and rows: the same draws
    assert len(set(seeds)) == len(seeds) == 3 * JOB.group_size
    assert owners == [(s, i) for s, n in (("training", 2), ("validation", 1))
                      for i in range(n) for _ in range(JOB.group_size)]
    assert {r["responses_create_params"]["max_output_tokens"] for r in batch} == {8}
    other, _ = seeded_batch(splits, dataclasses.replace(JOB, seed=8), PROFILE_SALT)
    assert other != batch
    assert PROFILE_SALT not in (0, 1, 2)  # apart from training, validation and the probe


def test_the_pass_threshold_comes_from_the_flag_then_the_configuration(tmp_path: Path) -> None:
    from envkit.profile import pass_threshold_for
    from envkit.validate.settings import SettingsError

    package = tmp_path / "pkg"
    package.mkdir()
    assert pass_threshold_for(package, None) == 1.0  # full marks: a binary verifier's pass
    (tmp_path / "pyproject.toml").write_text("[tool.envkit]\nprofile-pass-threshold = 0.5\n")
    assert pass_threshold_for(package, None) == 0.5
    assert pass_threshold_for(package, 0.25) == 0.25
    assert pass_threshold_for(package, None, isolated=True) == 1.0
    (tmp_path / "pyproject.toml").write_text('[tool.envkit]\nprofile-pass-threshold = "x"\n')
    with pytest.raises(SettingsError, match="`profile-pass-threshold` must be a number"):
        pass_threshold_for(package, None)


def test_no_dataset_is_written_after_a_failed_rollout(capsys: pytest.CaptureFixture) -> None:
    from envkit.output.render import render

    rows = (row_profile("training", 0, [1.0, 0.0], ["timeout"]),)
    report = ProfileReport("m", "hf", 1.0, Sampled(JOB, rows, 0, 0), Band(0.1, 0.9))
    assert render(report, "human") == 1
    assert "dataset: not written (a rollout failed" in capsys.readouterr().out
