"""Run inside the nemo-platform 0.6.0 venv (CPython 3.13): the platform's own verdict on jobs.

stdin: ``{"mode": "validate" | "compile", "jobs": [...], "datasets": [...]}``; stdout: one JSON
list, one entry per job. ``validate`` asks the job model (``RlJobInput``) and the check made
before compile (``RlJobOutput.validate_for_training``); ``compile`` runs
``compile_grpo_config`` on the step config ``_build_grpo_training_step_config`` builds, with the
dataset counted as the sandboxed Gym (the platform default) counts it. The Gym environment,
logger and tokenizer blocks need the platform's services and a model on disk; they are in
envkit's "cannot apply here" list, so they are stubbed out here.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

os.environ.setdefault("NMP_RL_SANDBOXED_GYM_DEFAULT", "false")


def _output_for(inp):  # type: ignore[no-untyped-def]
    from nmp.rl.schemas.job import OutputResponse, RlJobOutput

    kind = "adapter" if getattr(inp.training, "finetuning_type", None) == "lora" else "model"
    return RlJobOutput(
        model=inp.model,
        dataset=inp.dataset,
        environment=inp.environment,
        training=inp.training,
        output=OutputResponse(name="out", fileset="default/out", type=kind),
    )


def verdict(job):  # type: ignore[no-untyped-def]
    from nemo_rl_plugin.schema import RlJobInput

    try:
        inp = RlJobInput.model_validate(job)
        if inp.training.type != "grpo":
            return {"accepted": False, "error": "not a GRPO job"}
        out = _output_for(inp)
        out.validate_for_training()
    except Exception as exc:
        return {"accepted": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
    return {"accepted": True, "error": None}


def compiled(job, dataset):  # type: ignore[no-untyped-def]
    from nemo_rl_plugin.schema import RlJobInput
    from nmp.rl.app.jobs import compiler
    from nmp.rl.tasks.training.backends.nemo_rl import grpo_config as gc

    gc._build_nemo_gym_env_config = lambda *a, **k: {}
    gc._build_logger_config = lambda *a, **k: {}
    gc.resolve_chat_template = lambda **k: None
    gc._build_tokenizer_config = lambda *a, **k: {}
    out = _output_for(RlJobInput.model_validate(job))
    out.validate_for_training()
    step = compiler._build_grpo_training_step_config(out, trust_remote_code=False)
    gym = step.gym.model_copy(update={"sandboxed": True, "sandbox_dataset_path": "/job/dataset"})
    dataset_cfg = step.dataset.model_copy(update={"path": dataset})
    with tempfile.TemporaryDirectory() as work:
        step = step.model_copy(update={"gym": gym, "dataset": dataset_cfg, "workspace_path": work})
        return gc.compile_grpo_config(step, None)


def main() -> None:
    request = json.load(sys.stdin)
    if request["mode"] == "validate":
        results = [verdict(job) for job in request["jobs"]]
    else:
        pairs = zip(request["jobs"], request["datasets"], strict=True)
        results = [compiled(job, dataset) for job, dataset in pairs]
    sys.stdout.write(json.dumps(results, default=str) + "\n")


if __name__ == "__main__":
    main()
