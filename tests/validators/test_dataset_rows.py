"""EK500–EK507: dataset rows, edge cases beyond the golden fixtures."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.gym.venv import ensure_gym_venv
from envkit.model import dataset as dataset_mod
from envkit.model.dataset import load_dataset
from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.package import load_package
from envkit.validators import CheckOptions, Inputs
from envkit.validators.dataset._responses import input_problems
from envkit.validators.dataset.checks import (
    MAX_PER_CODE,
    check_dataset_files,
    check_dataset_rows,
)

PACKAGES = REPO_ROOT / "fixtures" / "packages"
ADAPTER = PACKAGES / "valid-adapter-wheels-v1" / "pkg"
NATIVE = PACKAGES / "valid-native-v1" / "pkg"


def row(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "responses_create_params": {"input": [{"role": "user", "content": "hi"}]},
        "agent_ref": {"type": "responses_api_agents", "name": "echo_match_simple_agent"},
    }
    for key, value in overrides.items():
        if value is ...:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def vrow(index: int, **overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "task_idx": index,
        "vf_env_id": "reverse-text",
        "agent_ref": {"type": "responses_api_agents", "name": "verifiers_agent"},
    }
    return row(**{**fields, **overrides})


def write(directory: Path, lines: list[Any], name: str = "training.jsonl") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / name).open("wb") as fh:
        for item in lines:
            fh.write(item if isinstance(item, bytes) else json.dumps(item).encode() + b"\n")
    return directory


def run(data: Path, package: Path | None = None,
        options: CheckOptions | None = None) -> list[Diagnostic]:
    inputs = Inputs(package=load_package(package) if package else None, dataset=load_dataset(data),
                    options=options or CheckOptions())
    return [*check_dataset_files(inputs), *check_dataset_rows(inputs)]


def codes(diags: list[Diagnostic]) -> list[tuple[str, int | None]]:
    return [(d.code, d.line) for d in diags]


# -- EK500 / EK501: files and lines -------------------------------------------------------------


def test_missing_training_jsonl(tmp_path: Path) -> None:
    write(tmp_path, [row()], "validation.jsonl")
    assert codes(run(tmp_path)) == [("EK500", None)]


def test_training_jsonl_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "training.jsonl").mkdir()
    [diag] = run(tmp_path)
    assert diag.code == "EK500"
    assert "not a regular file" in diag.message


def test_non_object_lines_report_their_line(tmp_path: Path) -> None:
    lines = [row(), b"[1, 2]\n", b'"text"\n', b"42\n", b"null\n", b"{not json}\n", row()]
    diags = run(write(tmp_path, lines))
    assert codes(diags) == [("EK501", 2), ("EK501", 3), ("EK501", 4), ("EK501", 5), ("EK501", 6)]
    assert "an array" in diags[0].message
    assert "invalid JSON" in diags[4].message


def test_blank_lines_are_skipped_but_counted(tmp_path: Path) -> None:
    diags = run(write(tmp_path, [b"\n", b"   \n", row(agent_ref=...)]))
    assert codes(diags) == [("EK503", 3)]


def test_non_utf8_line(tmp_path: Path) -> None:
    diags = run(write(tmp_path, [row(), b'{"a": "\xff\xfe"}\n']))
    assert codes(diags) == [("EK501", 2)]
    assert "not UTF-8" in diags[0].message


def test_overlong_line_is_reported_not_buffered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataset_mod, "MAX_LINE_BYTES", 200)
    long_line = json.dumps(row(note="x" * 500)).encode() + b"\n"
    diags = run(write(tmp_path, [row(), long_line, row(agent_ref=...)]))
    assert codes(diags) == [("EK501", 2), ("EK503", 3)]
    assert "longer than" in diags[0].message


def test_last_line_without_newline(tmp_path: Path) -> None:
    diags = run(write(tmp_path, [row(), json.dumps(row(agent_ref=...)).encode()]))
    assert codes(diags) == [("EK503", 2)]


def test_rows_are_streamed(tmp_path: Path) -> None:
    data = load_dataset(write(tmp_path, [row()] * 3))
    rows = data.iter_rows("training.jsonl")
    assert iter(rows) is rows  # a generator: nothing is held beyond the current line
    assert [r.line for r in rows] == [1, 2, 3]


def test_huge_file_output_is_bounded(tmp_path: Path) -> None:
    bad = json.dumps(row(agent_ref=...)).encode() + b"\n"
    write(tmp_path, [bad * 50_000])
    diags = run(tmp_path)
    assert len(diags) == MAX_PER_CODE + 1
    summary = diags[-1]
    assert summary.line is None
    assert "49,980 more EK503" in summary.message


# -- EK502: the prompt ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "plain string prompt",
        [],
        [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        [{"role": "developer", "content": [{"type": "input_text", "text": "d"}]}],
        [{"role": "assistant", "content": [{"type": "output_text", "text": "a"}]}],
        [{"type": "message", "role": "user", "content": "u"}],
        [
            {
                "role": "user",
                "content": [{"type": "input_image", "detail": "auto", "image_url": "u"}],
            }
        ],
        [{"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"}],
    ],
)
def test_valid_prompts(value: Any) -> None:
    assert list(input_problems(value)) == []


@pytest.mark.parametrize(
    ("value", "where"),
    [
        (3, "input"),
        ({"role": "user"}, "input"),
        (["hi"], "input[0]"),
        ([{"role": "human", "content": "x"}], "input[0].role"),
        ([{"role": "tool", "content": "x"}], "input[0].role"),
        ([{"content": "x"}], "input[0]"),
        ([{"role": "user"}], "input[0].content"),
        ([{"role": "user", "content": 3}], "input[0].content"),
        ([{"role": "user", "content": ["hi"]}], "input[0].content[0]"),
        (
            [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}],
            "input[0].content[0].type",
        ),
        ([{"role": "user", "content": [{"type": "input_text"}]}], "input[0].content[0].text"),
        ([{"role": "user", "content": [{"type": "input_image"}]}], "input[0].content[0].detail"),
        ([{"type": "bogus"}], "input[0].type"),
    ],
)
def test_invalid_prompts(value: Any, where: str) -> None:
    assert [w for w, _ in input_problems(value)][:1] == [where]


def test_chat_messages_row_gets_a_move_hint(tmp_path: Path) -> None:
    [diag] = run(write(tmp_path, [row(responses_create_params=..., messages=[])]))
    assert diag.code == "EK502"
    assert "responses_create_params.input" in diag.hint


def test_extra_create_params_key_with_did_you_mean(tmp_path: Path) -> None:
    params = {"input": "x", "temprature": 0.7}
    [diag] = run(write(tmp_path, [row(responses_create_params=params)]))
    assert diag.code == "EK502"
    assert "`responses_create_params.temprature`" in diag.message
    assert "`temperature`" in diag.hint


def test_input_missing(tmp_path: Path) -> None:
    [diag] = run(write(tmp_path, [row(responses_create_params={"temperature": 1.0})]))
    assert "`responses_create_params.input` is missing" in diag.message


# -- EK503 / EK504: agent_ref ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "severity"),
    [
        (..., Severity.ERROR),
        ("echo_match_simple_agent", Severity.ERROR),
        ({"type": "responses_api_agents"}, Severity.ERROR),
        ({"type": "responses_api_agents", "name": ""}, Severity.ERROR),
        ({"type": "resources_servers", "name": "echo_match_simple_agent"}, Severity.ERROR),
        ({"name": "echo_match_simple_agent"}, Severity.WARNING),
    ],
)
def test_agent_ref_shape(tmp_path: Path, ref: Any, severity: Severity) -> None:
    [diag] = run(write(tmp_path, [row(agent_ref=ref)]))
    assert (diag.code, diag.severity) == ("EK503", severity)


def test_agent_ref_did_you_mean(tmp_path: Path) -> None:
    ref = {"type": "responses_api_agents", "name": "echo_match_simpl_agent"}
    [diag] = run(write(tmp_path, [row(agent_ref=ref)]), NATIVE)
    assert diag.code == "EK504"
    assert diag.hint == "Did you mean `echo_match_simple_agent`?"


def test_agent_ref_to_a_resources_server(tmp_path: Path) -> None:
    ref = {"type": "responses_api_agents", "name": "echo_match"}
    [diag] = run(write(tmp_path, [row(agent_ref=ref)]), NATIVE)
    assert "a `resources_servers` instance, not an agent" in diag.message


def test_agent_names_are_not_checked_without_a_package(tmp_path: Path) -> None:
    ref = {"type": "responses_api_agents", "name": "anything"}
    assert run(write(tmp_path, [row(agent_ref=ref)])) == []


def test_agent_names_are_not_checked_when_configs_are_broken(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "nemo-environment.yaml").write_text(
        "format: wheels-v1\nconfig_paths: [configs/a.yaml]\nmetadata: {name: x}\n"
    )
    (pkg / "configs").mkdir()
    (pkg / "configs" / "a.yaml").write_text("a: [unclosed\n")
    ref = {"type": "responses_api_agents", "name": "anything"}
    assert run(write(tmp_path / "data", [row(agent_ref=ref)]), pkg) == []


# -- EK505 / EK506: verifiers rows ----------------------------------------------------------------


def test_adapter_rows_need_vf_env_id(tmp_path: Path) -> None:
    [diag] = run(write(tmp_path, [vrow(0, vf_env_id=...)]), ADAPTER)
    # the fixture's verifiers_agent config sets the same vf_env_id: Gym falls back to it
    assert (diag.code, diag.severity) == ("EK505", Severity.WARNING)


def test_adapter_rows_without_any_vf_env_id(tmp_path: Path) -> None:
    other_agent = {"type": "responses_api_agents", "name": "verifiers_agent_environment_server"}
    diags = run(write(tmp_path, [vrow(0, vf_env_id=..., agent_ref=other_agent)]), ADAPTER)
    assert ("EK505", Severity.ERROR) in [(d.code, d.severity) for d in diags]


@pytest.mark.parametrize("value", ["", 3, "reverse_text"])
def test_vf_env_id_values(tmp_path: Path, value: Any) -> None:
    [diag] = run(write(tmp_path, [vrow(0, vf_env_id=value)]), ADAPTER)
    assert (diag.code, diag.severity) == ("EK505", Severity.ERROR)


def test_vf_env_id_without_package_only_needs_a_string(tmp_path: Path) -> None:
    assert run(write(tmp_path, [vrow(0, vf_env_id="anything")])) == []
    assert [d.code for d in run(write(tmp_path, [vrow(0, vf_env_id="")]))] == ["EK505"]


@pytest.mark.parametrize("value", [..., "3", 1.5, True])
def test_task_idx_missing_or_not_int(tmp_path: Path, value: Any) -> None:
    [diag] = run(write(tmp_path, [vrow(0, task_idx=value)]), ADAPTER)
    assert (diag.code, diag.severity) == ("EK506", Severity.WARNING)


def test_duplicate_task_idx_in_training_only(tmp_path: Path) -> None:
    big = 1 << 30  # beyond the bitmap: the set fallback
    write(tmp_path, [vrow(0), vrow(big), vrow(0), vrow(big), vrow(-1), vrow(-1)])
    write(tmp_path, [vrow(5), vrow(5)], "validation.jsonl")  # repeating scores k times (seed 001)
    diags = run(tmp_path, ADAPTER)
    assert codes(diags) == [("EK506", 3), ("EK506", 4), ("EK506", 6)]
    assert all(d.path == "training.jsonl" for d in diags)


def test_rows_of_native_packages_are_not_verifiers_rows(tmp_path: Path) -> None:
    assert run(write(tmp_path, [row()]), NATIVE) == []


# -- CLI -----------------------------------------------------------------------------------


def test_cli_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, [row(), b"[]\n"])
    rc = main(["validate", "--dataset", str(tmp_path), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert [(d["code"], d["path"], d["line"]) for d in out["diagnostics"]] == [
        ("EK501", "training.jsonl", 2)
    ]


# -- real Gym -------------------------------------------------------------------------------------

_PROBE = """
import json, sys
from nemo_gym.openai_utils import NeMoGymResponseCreateParamsNonStreaming as M
for line in sys.stdin:
    try:
        M.model_validate(json.loads(line)); print("ok")
    except Exception:
        print("bad")
"""

_CORPUS: list[dict[str, Any]] = [
    {"input": "hi"},
    *(
        {"input": [{"role": r, "content": "x"}]}
        for r in ("system", "developer", "user", "assistant")
    ),
    {"input": [{"role": "assistant", "content": [{"type": "output_text", "text": "a"}]}]},
    {"input": [{"role": "user", "content": [{"type": "input_text", "text": "a"}]}]},
    {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]},
    {"input": [{"role": "user", "content": [{"type": "input_text"}]}]},
    {"input": [{"role": "user", "content": ["hi"]}]},
    {"input": [{"role": "human", "content": "x"}]},
    {"input": [{"content": "x"}]},
    {"input": [{"type": "bogus"}]},
    {"input": ["hi"]},
    {"input": 3},
    {"input": "x", "foo": 1},
    {"input": "x", "temperature": 0.5, "top_p": 0.9},
    {},
]


def _envkit_accepts(params: dict[str, Any]) -> bool:
    from envkit.validators.dataset._responses import CREATE_PARAMS_FIELDS

    if "input" not in params or set(params) - CREATE_PARAMS_FIELDS:
        return False
    return not list(input_problems(params["input"]))


@pytest.mark.gym
def test_verdicts_match_real_gym() -> None:
    """Whatever Gym's request model rejects, envkit rejects; what envkit accepts, Gym accepts.

    envkit is deliberately stricter on roles and message shapes: Gym's permissive fallback
    item (``mcp_list_tools``) swallows ``{"role": "human"}`` and role-less dicts, which then
    break at the model server instead of at validation.
    """
    gym_python = ensure_gym_venv("0.7.0", allow_python_override=True).python
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    stdin = "".join(json.dumps(p) + "\n" for p in _CORPUS)
    out = subprocess.run(
        [str(gym_python), "-c", _PROBE],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    ).stdout.split()
    for params, gym_verdict in zip(_CORPUS, out, strict=True):
        if _envkit_accepts(params):
            assert gym_verdict == "ok", params
        if gym_verdict == "bad":
            assert not _envkit_accepts(params), params


# -- EK507: the reference answer in the prompt --------------------------------------------------


def leak_row(prompt: Any, **reference: Any) -> dict[str, Any]:
    return row(responses_create_params={"input": prompt}, **reference)


def test_leaked_answers_are_one_finding_per_file_with_share_and_first_lines(tmp_path: Path) -> None:
    lines = [leak_row(f"Spell {i} as a word: seventeen{i}", expected_answer=f"seventeen{i}")
             for i in range(8)]
    lines += [leak_row("Name an ocean.", expected_answer="Pacific")] * 2
    write(tmp_path, lines)
    write(tmp_path, lines[-2:], "validation.jsonl")
    diags = run(tmp_path)
    assert codes(diags) == [("EK507", 1)]
    (diag,) = diags
    assert diag.severity is Severity.WARNING and diag.path == "training.jsonl"
    assert "8 of 10 rows (80%)" in diag.message and "`expected_answer`" in diag.message
    assert "lines 1, 2, 3, 4, 5 (first 5 shown)" in diag.message
    assert diag.hint and "leak-min-chars" in diag.hint


@pytest.mark.parametrize(("prompt", "reference", "leaked"), [
    ("What is 2 + 2? Answer 4.", "4", False),  # shorter than leak-min-chars
    ("The code is 12345.", "1234", False),  # not on a token boundary
    ("The code is 1234.", "1234", True),
    ("the answer:   PACIFIC\n ocean", "Pacific Ocean", True),  # case and whitespace
    ("Pacifically speaking", "Pacific", False),
    ("f(x) = (a+b)^2", "(a+b)", True),  # edges that are not word characters
])
def test_leak_matching(tmp_path: Path, prompt: str, reference: str, leaked: bool) -> None:
    write(tmp_path, [leak_row(prompt, expected_answer=reference)])
    assert codes(run(tmp_path)) == ([("EK507", 1)] if leaked else [])


def test_leak_reads_every_message_and_content_part_and_the_probes_fields(tmp_path: Path) -> None:
    write(tmp_path, [
        leak_row([{"role": "system", "content": "Example answer: seventeen"},
                  {"role": "user", "content": "Spell 17."}], ground_truth="seventeen"),
        leak_row([{"role": "user", "content": [{"type": "input_text", "text": "x = lorem"}]}],
                 solution="lorem"),
        leak_row("the target is hidden", target="hidden"),  # not a reference field
        leak_row("an object reference {}", expected_answer={"a": 1}),
    ])
    (diag,) = run(tmp_path)
    assert "2 of 2 rows" in diag.message and "lines 1, 2" in diag.message


def test_leak_min_chars_setting(tmp_path: Path) -> None:
    write(tmp_path, [leak_row("2 + 2 = 4", expected_answer="4")])
    assert codes(run(tmp_path, options=CheckOptions(leak_min_chars=1))) == [("EK507", 1)]
    write(tmp_path, [leak_row("The capital is Paris", expected_answer="Paris")])
    assert run(tmp_path, options=CheckOptions(leak_min_chars=6)) == []


def test_leak_min_chars_from_tool_envkit(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    data = write(tmp_path / "data", [leak_row("2 + 2 = 4", expected_answer="4")])
    (tmp_path / "pyproject.toml").write_text("[tool.envkit]\nleak-min-chars = 1\n")
    monkeypatch.chdir(tmp_path)
    code = main(["validate", "--dataset", str(data), "--output-format", "json", "--no-cache"])
    report = json.loads(capsys.readouterr().out)
    found = [d["code"] for r in report.get("results", [report]) for d in r["diagnostics"]]
    assert found == ["EK507"], report
    assert code == 0
