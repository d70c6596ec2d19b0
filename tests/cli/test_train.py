from __future__ import annotations

import json

import pytest

from envkit.cli import main

pytest.importorskip("torch")

from toy_envs import char_pattern_rows, make_native_package, write_dataset


@pytest.fixture
def inputs(tmp_path):
    pkg = make_native_package(tmp_path / "pkg")
    data = write_dataset(tmp_path / "data", char_pattern_rows(4))
    return pkg, data


def _job(tmp_path, training, **refs):
    job = {"model": "default/m", "dataset": "default/d", "environment": "default/e", **refs}
    job["training"] = training
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


def test_train_names_missing_local_inputs(tmp_path, capsys):
    job = _job(tmp_path, {"type": "grpo"})
    assert main(["train", str(job), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "`environment` (--env)" in err
    assert "`model` (--model)" in err
    assert "Traceback" not in err


def test_train_refuses_a_job_that_fails_validation(tmp_path, inputs, capsys):
    pkg, data = inputs
    job = _job(tmp_path, {"temperature": 1.0})  # no training.type: EK600
    rc = main(
        [
            "train",
            str(job),
            "--env",
            str(pkg),
            "--dataset",
            str(data),
            "--model",
            str(tmp_path),
            "-o",
            str(tmp_path / "out"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1
    assert "EK600" in err
    assert not (tmp_path / "out").exists()


def test_train_reports_an_unloadable_model(tmp_path, inputs, capsys):
    pkg, data = inputs
    job = _job(tmp_path, {"type": "grpo"})
    rc = main(
        [
            "train",
            str(job),
            "--env",
            str(pkg),
            "--dataset",
            str(data),
            "--model",
            str(tmp_path),
            "-o",
            str(tmp_path / "out"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1
    assert "cannot load a causal LM" in err
    assert "Traceback" not in err


def test_train_refuses_impossible_settings(tmp_path, inputs, capsys):
    pkg, data = inputs
    job = _job(
        tmp_path,
        {"type": "grpo", "temperature": 0},
        environment=str(pkg),
        dataset=str(data),
        model=str(tmp_path),
    )
    rc = main(["train", str(job), "-o", str(tmp_path / "out")])
    assert rc == 1
    assert "temperature" in capsys.readouterr().err


def test_a_fresh_run_refuses_an_output_holding_another_run(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.jsonl").write_text('{"step": 0, "val_accuracy": 0.5}\n')
    job = _job(tmp_path, {"type": "grpo"})
    assert main(["train", str(job), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "holds a previous run" in err and "--resume" in err
    assert (out / "metrics.jsonl").read_text() == '{"step": 0, "val_accuracy": 0.5}\n'


def test_sigterm_becomes_an_interrupt_so_servers_are_torn_down():
    """`envkit train`/`rollout` run inside this: SIGTERM unwinds every `with` (Gym servers,
    the policy endpoint) instead of killing envkit and orphaning Gym's own session."""
    import os
    import signal

    from envkit.cli._common import sigterm_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    unwound = []
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0.1)  # let the handler run
        finally:
            unwound.append(True)
    assert unwound == [True]
    assert signal.getsignal(signal.SIGTERM) is before
