"""``envkit init``: what each template writes, and that it never writes over anything."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from envkit.cli import main
from envkit.init import TEMPLATES, InitRequest, project_files
from envkit.init.project import context_for, next_steps
from envkit.init.render import CI_PATHS, load_template, render_path, substitute
from envkit.init.write import InitTargetError, _move_entries, write_new_dir
from envkit.model.jobspec import LoraSettings
from envkit.schemas import load_schema

GYM_FILES = {
    "README.md", "envkit.toml", ".gitignore", ".pre-commit-config.yaml",
    ".github/workflows/envkit.yml", "jobs/grpo.json",
    "resources_servers/my_env/app.py", "resources_servers/my_env/requirements.txt",
    "resources_servers/my_env/configs/my_env.yaml",
    "resources_servers/my_env/data/train.jsonl", "resources_servers/my_env/data/validation.jsonl",
    "resources_servers/my_env/tests/verifier_cases.jsonl",
    "resources_servers/my_env/tests/test_app.py",
}


def _files(template: str = "gym", **kw: object) -> dict[str, bytes]:
    return project_files(InitRequest(Path("/x/my-env"), template, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_placeholder_is_filled_and_every_file_parses(template: str) -> None:
    for path, data in _files(template).items():
        text = data.decode()
        assert "{{" not in path and not re.search(r"\{\{\w+\}\}", text), path
        if path.endswith(".py"):
            compile(text, path, "exec")
        elif path.endswith((".yaml", ".yml")):
            assert isinstance(yaml.safe_load(text), dict), path
        elif path.endswith(".jsonl"):
            assert all(isinstance(json.loads(line), dict) for line in text.splitlines())
        elif path.endswith(".json"):
            json.loads(text)


def test_gym_template_files() -> None:
    assert set(_files()) == GYM_FILES


def test_no_ci_leaves_out_the_hook_and_the_workflow() -> None:
    files = _files(ci=False)
    assert set(files) == {p for p in GYM_FILES if not p.startswith(CI_PATHS)}
    assert b".pre-commit-config.yaml" not in files["README.md"]


def test_job_has_the_platform_lora_defaults_and_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    job = json.loads(_files()["jobs/grpo.json"])
    defaults = LoraSettings()
    assert job["training"]["finetuning_type"] == "lora"
    assert job["training"]["lora"] == {"rank": defaults.rank, "alpha": defaults.alpha,
                                       "dropout": defaults.dropout}
    (tmp_path / "grpo.json").write_text(json.dumps(job))
    rc = main(["validate", "--job", str(tmp_path / "grpo.json"), "--output-format", "json"])
    assert rc == 0, capsys.readouterr().out


def test_verifier_fixture_has_the_four_kinds_gym_requires() -> None:
    lines = _files()["resources_servers/my_env/tests/verifier_cases.jsonl"].decode().splitlines()
    cases = [json.loads(line) for line in lines]
    assert {c["kind"] for c in cases} == {"full_reward", "zero_reward", "malformed", "determinism"}
    for case in cases:  # Gym 0.7's VerifierFixtureCase: exactly one expectation, by kind
        assert ("expected_error" in case) == (case["kind"] == "malformed")
        assert ("expected_reward" in case) != (case["kind"] == "malformed")


def test_rows_carry_the_answer_the_verifier_compares() -> None:
    rows = _files()["resources_servers/my_env/data/train.jsonl"].decode().splitlines()
    assert len(rows) >= 4 and all("expected_answer" in json.loads(r) for r in rows)


def test_native_v1_is_not_validated_offline() -> None:
    files = _files(format="native-v1")
    assert b"offline = false" in files["envkit.toml"]
    workflow = files[".github/workflows/envkit.yml"].decode()
    assert "--format native-v1" in workflow and "--offline" not in workflow


def test_render_path_spells_dotfiles_and_strips_the_suffix() -> None:
    assert render_path("dot-github/workflows/envkit.yml.tmpl", {}) == ".github/workflows/envkit.yml"
    with pytest.raises(KeyError):
        substitute("{{nope}}", {})


def test_every_template_file_is_shipped_as_package_data() -> None:
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"envkit.init" = ["templates/**/*.tmpl"]' in pyproject
    assert all(p.endswith(".tmpl") for p in load_template("gym"))


def test_init_writes_the_project_and_json_follows_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    rc = main(["init", str(tmp_path / "my-env"), "--output-format", "json"])
    out = json.loads(capsys.readouterr().out)
    Draft202012Validator(load_schema("init")).validate(out)
    assert rc == 0 and set(out["files"]) == GYM_FILES
    assert all((tmp_path / "my-env" / f).is_file() for f in GYM_FILES)
    assert [p.name for p in tmp_path.iterdir()] == ["my-env"]  # no temp dir left


def test_init_refuses_a_non_empty_directory_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    target = tmp_path / "proj"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    rc = main(["init", str(target)])
    err = capsys.readouterr().err
    assert rc == 1 and "not empty" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["notes.txt", "proj"]
    assert (target / "notes.txt").read_text() == "mine"


def test_init_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(InitTargetError):
        write_new_dir(tmp_path / "f", {"a": b"b"})
    assert (tmp_path / "f").read_text() == "x"


def test_init_into_the_empty_working_directory_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    inode = tmp_path.stat().st_ino
    monkeypatch.chdir(tmp_path)
    assert main(["init", ".", "--name", "demo", "--no-ci"]) == 0
    assert tmp_path.stat().st_ino == inode
    assert (tmp_path / "resources_servers" / "demo" / "app.py").is_file()
    assert "envkit build resources_servers/demo" in capsys.readouterr().out


def test_a_clash_while_moving_in_undoes_every_move(tmp_path: Path) -> None:
    staged, out = tmp_path / "staged", tmp_path / "out"
    for name in ("a.txt", "b.txt", "c.txt"):
        (staged / name).parent.mkdir(parents=True, exist_ok=True)
        (staged / name).write_text("new")
    out.mkdir()
    (out / "b.txt").write_text("theirs")  # appeared after the emptiness check
    with pytest.raises(InitTargetError, match=r"b\.txt"):
        _move_entries(staged, out)
    assert sorted(p.name for p in out.iterdir()) == ["b.txt"]
    assert (out / "b.txt").read_text() == "theirs"
    assert sorted(p.name for p in staged.iterdir()) == ["a.txt", "b.txt", "c.txt"]


def test_a_name_without_a_letter_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["init", str(tmp_path / "123")]) == 2
    assert "--name" in capsys.readouterr().err
    assert not (tmp_path / "123").exists()


def test_verifiers_template_refuses_a_gym_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    rc = main(["init", str(tmp_path / "v"), "--template", "verifiers", "--format", "native-v1"])
    assert rc == 2 and not (tmp_path / "v").exists()


def test_doctests() -> None:
    import doctest

    from envkit.init import project, render

    for module in (render, project):
        assert doctest.testmod(module).failed == 0, module.__name__


@pytest.mark.parametrize(("arch", "runner"), [("x86_64", "ubuntu-latest"),
                                              ("aarch64", "ubuntu-24.04-arm")])
@pytest.mark.parametrize("template", TEMPLATES)
def test_the_workflow_runs_on_a_runner_of_the_packages_arch(
    template: str, arch: str, runner: str,
) -> None:
    """smoke and probe install wheels/ and start the servers: an aarch64 package's wheels do
    not run on an x86_64 runner."""
    workflow = yaml.safe_load(_files(template, arch=arch)[".github/workflows/envkit.yml"])
    assert workflow["jobs"]["package"]["runs-on"] == runner


def test_next_steps_say_where_smoke_can_run() -> None:
    request = InitRequest(Path("/x/my-env"), arch="aarch64")
    context = context_for(request)
    on_arm = next_steps(request, context, host_arch="aarch64")
    assert on_arm[-1] == "envkit smoke package --dataset package-data --offline"
    on_x86 = next_steps(request, context, host_arch="x86_64")
    assert on_x86[-1].endswith("# on an aarch64 machine (the workflow's runner)")
