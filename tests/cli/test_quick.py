"""The quick path reads ``envkit validate`` as click reads it, or declines; the output of a run
is the same either way; and it never imports click."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import REPO_ROOT

from envkit.cli import main, quick
from envkit.cli._common import FORMAT_KEY, VERBOSITY_KEY
from envkit.cli._logging import configure_logging
from envkit.cli.app import cli
from envkit.cli.validate import validate_command

CASES = REPO_ROOT / "fixtures" / "packages"
VALID = CASES / "valid-native-v1" / "pkg"
WRONG_ARCH = CASES / "EK401-wrong-arch" / "pkg"
DATASET = CASES / "EK500-no-training-jsonl" / "data"
JOB = CASES / "EK600-missing-training-type" / "job.json"


@pytest.fixture(autouse=True)
def _logging_reset() -> object:
    """``-q``/``-v`` set logger levels as they are parsed; put them back."""
    yield
    configure_logging(0)


def _click_parse(args: list[str]) -> tuple[dict[str, object], str, int]:
    """What click makes of ``envkit validate ARGS``: its values, format and verbosity."""
    root = click.Context(cli, info_name="envkit", obj={})
    ctx = validate_command.make_context("validate", list(args), parent=root)
    state = root.obj
    return dict(ctx.params), str(state.get(FORMAT_KEY, "human")), int(state.get(VERBOSITY_KEY, 0))


def test_every_option_of_the_click_command_is_read_or_declined() -> None:
    read = {*quick._FLAGS, *quick._VALUES, *quick._MULTIPLE, "--quiet", "--verbose", "-q", "-v"}
    options = {opt for p in validate_command.params if isinstance(p, click.Option)
               for opt in (*p.opts, *p.secondary_opts)}
    options |= {"-h", "--help"}  # click's own
    assert options - read - quick.DECLINED == set(), "new option: read it in quick or decline it"
    assert (read | quick.DECLINED) - options == set(), "quick reads an option click lost"
    exposed = {p.name for p in validate_command.params if p.expose_value}
    assert set(quick._DEFAULTS) == exposed
    assert quick.parse(["validate"]) == _click_parse([])


PATHS = [str(VALID), str(VALID / "nemo-environment.yaml"), str(WRONG_ARCH), "no/such/path",
         "", str(JOB)]
TOKENS = st.sampled_from([
    "--offline", "--no-offline", "--strict", "--no-strict", "--verify-hashes", "--isolated",
    "--ignore-unowned-files", "--no-cache", "-q", "-qq", "-v", "-vq", "--quiet", "--verbose",
    "--output-format=json", "--format=sarif", "--output-format=xml", "--arch=aarch64",
    "--arch=riscv", "--python=3.12", "--glibc=2_31", "--gym-version=0.7.0", "--select=EK1",
    "--ignore=EK2", "--extend-select=EK3", "--extend-ignore=EK4", "--exclude=*/x",
    "--select=", "-o", "--help", "-h", "--", "-", "--smoke", "--probe", "--show-settings",
    "--nope", "--offline=1", "-x", "-qo",
])
PAIRS = st.tuples(st.sampled_from(["--output-format", "--format", "--arch", "--python",
                                   "--glibc", "--select", "--ignore", "--exclude",
                                   "--dataset", "--job"]),
                  st.sampled_from(["json", "github", "x86_64", "3.13", "2_28", "EK1", "-q",
                                   str(DATASET), str(JOB), str(VALID)]))
ARGV = st.lists(st.one_of(TOKENS.map(lambda t: [t]), st.sampled_from(PATHS).map(lambda p: [p]),
                          PAIRS.map(list)), max_size=6).map(
    lambda parts: [token for part in parts for token in part])


@settings(max_examples=400, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(args=ARGV)
def test_what_the_quick_path_reads_is_what_click_reads(args: list[str]) -> None:
    ours = quick.parse(["validate", *args])
    if ours is None:
        return  # declined: click parses it (and reports any error)
    assert ours == _click_parse(args)


def test_the_plain_invocations_are_read() -> None:
    """What a hook, CI and the README run: never declined."""
    for args in ([str(VALID)], [str(VALID), "--offline"], [str(VALID), "--output-format", "json"],
                 [str(VALID / "nemo-environment.yaml"), "--strict", "-q"],
                 ["--dataset", str(DATASET), "--job", str(JOB), "--format=github"]):
        assert quick.parse(["validate", *args]) is not None, args


RUNS = [
    [str(VALID), "--offline"],
    [str(VALID), "--output-format", "json"],
    [str(WRONG_ARCH), "--format=sarif"],
    [str(WRONG_ARCH), "--output-format=github", "--strict"],
    [str(WRONG_ARCH), "-q", "--select", "EK4"],
    [str(VALID), "--select", "NOPE"],  # a usage error raised by the command
    [str(VALID), "--select", "NOPE", "--output-format", "json"],
    ["--dataset", str(DATASET), "--job", str(JOB)],
]


@pytest.mark.parametrize("args", RUNS, ids=range(len(RUNS)))
def test_a_run_prints_what_the_click_path_prints(args: list[str],
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    assert quick.parse(["validate", *args]) is not None
    quick_rc = main(["validate", "--no-cache", *args])
    quick_out = capsys.readouterr()
    monkeypatch.setattr(quick, "parse", lambda argv: None)
    click_rc = main(["validate", "--no-cache", *args])
    click_out = capsys.readouterr()
    assert (quick_rc, quick_out.out, quick_out.err) == (click_rc, click_out.out, click_out.err)


def _imported(args: list[str], cwd: Path) -> set[str]:
    """The modules of ``click``, ``yaml``, ``zipfile`` and ``logging`` one process imported to
    run ``envkit validate ARGS``."""
    code = ("import sys; from envkit.cli import main; main(sys.argv[1:]); print(*sorted({'click', "
            "'yaml', 'zipfile', 'logging'} & set(sys.modules)), sep=',', file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code, "validate", "--no-cache", *args],
                         capture_output=True, text=True, check=False, cwd=cwd)
    assert out.returncode in (0, 1), out.stderr
    return set(filter(None, out.stderr.splitlines()[-1].split(",")))


def test_a_small_package_is_validated_without_click_pyyaml_zipfile_or_logging(
        tmp_path: Path) -> None:
    """The imports a pre-commit run of a small package pays for: none of these (its configs
    are plain block YAML, it ships no wheels, and nothing validate runs logs)."""
    assert _imported([str(VALID)], tmp_path) == set()


def test_nothing_the_quick_path_runs_imports_logging(tmp_path: Path) -> None:
    """It sets logging up only for -q/-v: packages with wheels and with broken YAML, a dataset
    and a job (and the settings of this checkout's pyproject.toml) must not log either:
    nothing it runs imports ``logging``."""
    args = [str(WRONG_ARCH), str(CASES / "EK300-invalid-yaml" / "pkg"), "--dataset",
            str(DATASET), "--job", str(JOB), "--output-format", "sarif"]
    assert quick.parse(["validate", *args]) is not None
    assert "logging" not in _imported(args, tmp_path)


def test_shell_completion_is_left_to_click(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """click answers ``_ENVKIT_COMPLETE`` before parsing anything; so must the quick path."""
    monkeypatch.setenv(quick.COMPLETE_VAR, "bash_source")
    assert quick.parse(["validate", str(VALID)]) is None
    with pytest.raises(SystemExit):  # click prints the script and exits
        main(["validate", str(VALID)])
    assert "complete" in capsys.readouterr().out
