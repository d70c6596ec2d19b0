"""``envkit train`` reads its inputs once (``trainer/inputs.py``) and validates what it read.

Real inputs: a native-v1 toy package, a dataset written to disk, a job file with local refs.
The counters wrap the real readers; nothing is faked.
"""

from __future__ import annotations

import json

import pytest
from support.grpo_jobs import training, write_job
from toy_envs import char_pattern_rows, make_native_package, write_dataset

import envkit.model.jobfile as jobfile
import envkit.model.package as package_model
import envkit.validate.validate as check_validate
from envkit.model.dataset import Dataset
from envkit.trainer.inputs import TrainInputError, TrainRequest, read_dataset, read_inputs
from envkit.validate.validate import ValidateRequest, validate, validate_inputs
from envkit.validators import CheckOptions, Inputs


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    return make_native_package(tmp_path_factory.mktemp("pkg") / "pkg", "char_pattern")


def _inputs(tmp_path, pkg, block=None, *, validation=None):
    data = write_dataset(tmp_path / "data", char_pattern_rows(6), validation)
    job = write_job(tmp_path / "job.json", block or training(), environment=pkg, dataset=data,
                    model=tmp_path / "model")
    (tmp_path / "model").mkdir()
    return TrainRequest(job=job, output=tmp_path / "run")


def _count(monkeypatch, owner, name):
    calls = []
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_job_package_and_dataset_are_read_once(tmp_path, pkg, monkeypatch):
    request = _inputs(tmp_path, pkg, validation=char_pattern_rows(2, seed=1))
    typed = _count(monkeypatch, jobfile, "read_job")
    loads = _count(monkeypatch, check_validate, "read_package")  # as validate reads it
    opened = _count(monkeypatch, Dataset, "iter_rows")  # the one method that reads a file
    inputs = read_inputs(request)
    assert len(typed) == 1  # the validator and the config share JobDoc.typed
    assert len(loads) == 1
    assert sorted(args[1] for args in opened) == ["training.jsonl", "validation.jsonl"]
    assert len(inputs.train_rows) == 6
    assert len(inputs.val_rows) == 2
    assert inputs.config.training.num_generations_per_prompt == 4


def test_what_was_read_is_validated_as_validate_reads_it(tmp_path, pkg):
    request = _inputs(tmp_path, pkg)
    options = CheckOptions(allow_local_refs=True)
    checks = ValidateRequest(package=pkg, dataset=tmp_path / "data", job=request.job,
                             options=options)
    by_path = validate(checks)
    read = validate_inputs(Inputs(package_model.load_package(pkg),
                                  read_dataset(tmp_path / "data"),
                                  jobfile.load_job(request.job), options), checks)
    assert read == by_path


def test_invalid_rows_refuse_the_run_with_their_codes(tmp_path, pkg):
    request = _inputs(tmp_path, pkg)
    with (tmp_path / "data" / "training.jsonl").open("a") as fh:
        fh.write("[1, 2]\n")
    with pytest.raises(TrainInputError) as err:
        read_inputs(request)
    assert "EK501" in [d.code for d in err.value.diagnostics]


def test_job_rules_are_the_validators_alone(tmp_path, pkg):
    # G = 1 with the leave-one-out baseline: refused by the registered rule (EK612), with
    # every other violation of the same job (EK605: 3 prompts x 1 rollout vs batch 16)
    block = training(num_generations_per_prompt=1, num_prompts_per_step=3)
    request = _inputs(tmp_path, pkg, block)
    with pytest.raises(TrainInputError) as err:
        read_inputs(request)
    codes = {d.code for d in err.value.diagnostics}
    assert {"EK612", "EK605"} <= codes


def test_a_job_that_is_not_an_object_is_refused(tmp_path, pkg):
    request = _inputs(tmp_path, pkg)
    request.job.write_text(json.dumps([1]))
    with pytest.raises(TrainInputError) as err:
        read_inputs(request)
    assert [d.code for d in err.value.diagnostics] == ["EK611"]
