"""Differential tests against the platform's own code (nemo-platform 0.6.0, CPython 3.13).

1. Compile: every corpus job through the platform's ``compile_grpo_config`` and through
   ``envkit train --print-config``: every key envkit emits equals the platform's; every key the
   platform emits and envkit does not is in envkit's documented "cannot apply here" list.
2. Validate: ``envkit validate --job``'s verdict equals the platform's (its job model, then the
   check made before compile) over the corpus plus 600 mutated jobs; each rejection carries an
   EK code and names the field path.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.job_corpus import corpus, mutated
from support.paths import SUPPORT
from support.platform_venv import ensure_platform_venv

from envkit.cli import main
from envkit.model.diagnostics import Severity
from envkit.model.jobfile import parse_job
from envkit.trainer.nemo_config import CANNOT_APPLY
from envkit.validators.job.checks import job_diagnostics

pytestmark = pytest.mark.platform

ORACLE = SUPPORT / "platform_oracle.py"
ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "add 2 and 3"}]},
    "agent_ref": {"type": "responses_api_agents", "name": "simple_agent"},
}


def _oracle(request: dict[str, Any]) -> list[Any]:
    python = ensure_platform_venv()
    proc = subprocess.run(
        [str(python), str(ORACLE)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """37 training rows and no validation; 20 training rows and 5 validation rows."""
    out = []
    for name, train, val in (("plain", 37, 0), ("with-val", 20, 5)):
        root = tmp_path_factory.mktemp(name)
        (root / "training.jsonl").write_text("".join(json.dumps(ROW) + "\n" for _ in range(train)))
        if val:
            (root / "validation.jsonl").write_text(
                "".join(json.dumps(ROW) + "\n" for _ in range(val))
            )
        out.append(root)
    return out


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict) and node:
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_leaves(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: node}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b)
    return a == b


def _platform_lrs(compiled: dict[str, Any]) -> list[float]:
    """The LR at every GRPO step from the platform's compiled optimizer and scheduler blocks,
    run through torch's own schedulers as NeMo-RL builds them."""
    import warnings

    import torch

    policy = compiled["policy"]
    kwargs = {k: v for k, v in policy["optimizer"]["kwargs"].items() if k != "fused"}
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], **kwargs)
    *blocks, milestones = policy["scheduler"]
    schedulers = [
        getattr(torch.optim.lr_scheduler, b["name"].rsplit(".", 1)[1])(optimizer, **b["kwargs"])
        for b in blocks
    ]
    scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers, **milestones)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation note inside SequentialLR
        for _ in range(compiled["grpo"]["max_num_steps"]):
            seen.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
    return seen


def _envkit_lrs(job: dict[str, Any], steps: int) -> list[float]:
    from envkit.trainer.config import grpo_config
    from envkit.trainer.optim import is_flat, lr_at

    cfg = grpo_config(job)
    t = cfg.training
    return [
        lr_at(s, lr=t.learning_rate, min_lr=t.min_learning_rate, warmup=t.warmup_steps,
              total=steps, flat=is_flat(t.optimizer_type))
        for s in range(steps)
    ]  # fmt: skip


def _envkit_config(job: dict[str, Any], dataset: Path, tmp: Path, capsys: Any) -> dict[str, Any]:
    path = tmp / "job.json"
    path.write_text(json.dumps(job))
    capsys.readouterr()
    argv = ["train", str(path), "--print-config", "--dataset", str(dataset)]
    assert main([*argv, "--output-format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["config"]


def test_print_config_equals_the_platform_compile(
    datasets: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = corpus()
    assert len(jobs) >= 30
    pairs = [(job, datasets[i % 2]) for i, job in enumerate(jobs)]
    theirs = _oracle({"mode": "compile", "jobs": jobs, "datasets": [str(d) for _, d in pairs]})
    unexplained, unequal, compared, lrs = set(), [], 0, 0
    for (job, dataset), platform in zip(pairs, theirs, strict=True):
        theirs_lr = _platform_lrs(platform)
        assert _envkit_lrs(job, len(theirs_lr)) == pytest.approx(theirs_lr, rel=1e-6, abs=1e-15)
        lrs += len(theirs_lr)
        ours = _leaves(_envkit_config(job, dataset, tmp_path, capsys))
        reference = _leaves(platform)
        for key, value in ours.items():
            compared += 1
            if key not in reference or not _same(value, reference[key]):
                unequal.append((job["training"], key, value, reference.get(key, "<absent>")))
        for key in reference.keys() - ours.keys():
            if not any(key == p or key.startswith(p + ".") for p in CANNOT_APPLY):
                unexplained.add(key)
    assert unequal == [], unequal[:5]
    assert unexplained == set()
    assert compared > 30 * 60
    assert lrs > 300  # LR values at every step, by torch's schedulers from the platform config


def test_validate_job_accepts_exactly_what_the_platform_accepts() -> None:
    jobs = corpus() + mutated(600)
    theirs = _oracle({"mode": "validate", "jobs": jobs})
    disagreements, unnamed = [], []
    accepted = 0
    for job, platform in zip(jobs, theirs, strict=True):
        raw = json.dumps(job).encode()
        diags = list(job_diagnostics(parse_job("job.json", raw)))
        errors = [d for d in diags if d.severity is Severity.ERROR]
        accepted += platform["accepted"]
        if platform["accepted"] == bool(errors):
            disagreements.append((job, platform["error"], [(d.code, d.message) for d in errors]))
        unnamed += [d for d in errors if not (d.code.startswith("EK6") and "`" in d.message)]
    assert disagreements == [], (len(disagreements), disagreements[:3])
    assert unnamed == []  # every rejection has its code and names the field path
    assert 100 < accepted < len(jobs) - 300  # both verdicts are well represented
