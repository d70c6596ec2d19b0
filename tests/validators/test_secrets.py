"""EK210: secrets in a package are found (dotenv and key files, private keys, credentials
files, the token shapes of OpenAI, GitHub, AWS, Hugging Face, Slack, Google and NVIDIA) with
file and line and the value masked; ordinary code does not match; ``envkit build`` leaves such
files out unless ``--include`` names them; ``envkit submit`` refuses a package holding one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gymtree_factory import make_gym_tree
from support.paths import REPO_ROOT

from envkit.converters.gym_tree import discover_servers, plan_tree
from envkit.model.secrets import find_secrets, scan_text
from envkit.model.tree import walk_files
from envkit.validate.validate import ValidateRequest, validate

VALID = REPO_ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
SECRETS = REPO_ROOT / "fixtures" / "packages" / "EK210-secrets" / "pkg"
IN_WHEEL = REPO_ROOT / "fixtures" / "packages" / "EK210-wheel-installs-dotenv" / "pkg"

# Shaped like the real thing, made up here (each vendor's prefix, length and alphabet).
TOKENS = {
    "OpenAI API key": "sk-proj-" + "Ab3dEf6hIj9kLmN0pQrStUvWxYz1234567890abcdEFG",
    "GitHub token": "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
    "GitHub fine-grained token": "github_pat_" + "11ABCDEFG0abcdefghijkl" + "_"
                                 + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6aB3dE6gH9jK2mN5pQ8sT1vW",
    "AWS access key id": "AKIA" + "Q3EGRPCXZ7NM4LKB",
    "Hugging Face token": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    "Slack token": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "Google API key": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "NVIDIA API key": "nvapi-" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6aB3dE6gH9jK2mN5pQ8sT1vW4yZ7b",
}


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_each_token_shape_is_found_with_its_line_and_masked(kind: str) -> None:
    token = TOKENS[kind]
    data = f"# settings\n\nclient = Client(key=\"{token}\")\n".encode()
    [found] = list(scan_text("app.py", data))
    assert (found.path, found.line, found.kind) == ("app.py", 3, kind)
    assert token not in found.shown and token[:4] in found.shown
    assert len(found.shown.split("…")[0]) <= 12


def test_a_private_key_block_is_found() -> None:
    data = b"x = 1\n-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----\n"
    [found] = list(scan_text("deploy.pem", data))
    assert (found.line, found.kind) == (2, "private key")
    assert "MIIE" not in found.shown


ORDINARY = b"""
import sklearn  # sk-learn
task-specific-runner-for-the-benchmark-suite-v2 = 1
def ghp_helper(): return "ghp_short"
hf_hub_download_the_model_weights_from_the_hub = None
AKIA_PREFIX = "AKIA"
name = "sk-" + "x" * 40
slack = "xoxb-your-token-here"
api_key = "${oc.env:OPENAI_API_KEY}"
long_name = "sk-this-is-a-very-long-but-lowercase-only-identifier"
-----BEGIN PUBLIC KEY-----
"""


def test_ordinary_code_does_not_match() -> None:
    assert list(scan_text("app.py", ORDINARY)) == []


def test_no_fixture_or_source_file_of_envkit_holds_a_secret_but_the_ek210_case() -> None:
    """The false-positive check on real text: every fixture (Gym servers, verifiers
    environments, packages) and envkit's own sources."""
    for folder in ("fixtures", "envkit", "validators", "converters", "trainer", "docs"):
        root = REPO_ROOT / folder
        found = [s for s in find_secrets(root, walk_files(root))  # the case, and its page
                 if not s.path.startswith(("packages/EK210-secrets/", "rules/EK210.md"))]
        assert found == [], folder


def test_the_fixture_reports_each_secret_file_once_with_its_line() -> None:
    report = validate(ValidateRequest(package=SECRETS))
    shown = sorted((d.path, d.line, d.severity.value) for d in report.diagnostics)
    assert shown == [(".env", 1, "warning"), ("NOTES.md", 3, "warning"),
                     ("credentials.json", 1, "warning"), ("id_rsa", 1, "warning")]
    text = " ".join(d.message for d in report.diagnostics)
    assert "FAKEfixture0NotAKey" not in text and "FAKEfixture0NotAToken" not in text
    assert ".env.example" not in {d.path for d in report.diagnostics}


def test_a_dotenv_file_a_vendored_wheel_installs_is_reported_at_the_wheel() -> None:
    """The wheel's own ``.env`` (a package-data glob took it in), not its ``.env.example``."""
    report = validate(ValidateRequest(package=IN_WHEEL))
    found = [(d.code, d.path) for d in report.diagnostics]
    assert found == [("EK210", "wheels/echo_scorer-1.0-py3-none-any.whl")]
    assert "`echo_scorer/.env`" in report.diagnostics[0].message
    assert ".env.example" not in report.diagnostics[0].message


def test_the_wheel_facts_store_keeps_the_secret_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel answered from the store names the same members as its archive did."""
    import envkit.supply.wheelfacts as wheelfacts

    wheel = next((IN_WHEEL / "wheels").glob("*.whl"))
    monkeypatch.setattr(wheelfacts.time, "time", lambda: 4e9)  # past the racy window
    facts = wheelfacts.WheelFacts(tmp_path / "store")
    first, second = facts.read(wheel), facts.read(wheel)
    assert facts.hits == 1
    assert first.secret_files == second.secret_files == ("echo_scorer/.env",)


def _validate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envkit", "validate", *args, "--no-cache"],
                          capture_output=True, text=True, check=False)


def test_a_warning_by_default_an_error_under_strict() -> None:
    plain = _validate(str(SECRETS))
    assert plain.returncode == 0 and "EK210" in plain.stdout
    strict = _validate(str(SECRETS), "--strict")
    assert strict.returncode == 1 and "EK210" in strict.stdout
    assert "sk-proj-FAKEfixture0NotAKey1234567890" not in plain.stdout + plain.stderr


def _server_with_secrets(tmp_path: Path) -> Path:
    server = make_gym_tree(tmp_path, "echo")
    (server / ".env").write_text(f"OPENAI_API_KEY={TOKENS['OpenAI API key']}\n")
    (server / ".env.example").write_text("OPENAI_API_KEY=\n")
    (server / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n")
    (server / "deploy.pem").write_text("-----BEGIN PRIVATE KEY-----\nx\n")
    (server / "cert.pem").write_text("-----BEGIN CERTIFICATE-----\nx\n")
    (server / "credentials.json").write_text(json.dumps({"private_key": "x"}))
    return server


def test_build_leaves_dotenv_and_key_files_out_and_says_so(tmp_path: Path) -> None:
    plan = plan_tree(discover_servers(_server_with_secrets(tmp_path)), "native-v1", "echo")
    rel = "resources_servers/echo"
    shipped = set(plan.files)
    for name in (".env", "id_ed25519", "deploy.pem", "credentials.json"):
        assert f"{rel}/{name}" not in shipped
        assert any(note.startswith(f"left out {rel}/{name} ") for note in plan.notes), name
    assert {f"{rel}/.env.example", f"{rel}/cert.pem"} <= shipped


def test_an_explicit_include_is_the_only_way_in(tmp_path: Path) -> None:
    plan = plan_tree(discover_servers(_server_with_secrets(tmp_path)), "native-v1", "echo",
                     include=("*/deploy.pem",))
    assert "resources_servers/echo/deploy.pem" in plan.files
    assert "resources_servers/echo/.env" not in plan.files
    assert any(n.startswith("included resources_servers/echo/deploy.pem") for n in plan.notes)


def test_submit_refuses_a_package_holding_a_secret_whatever_the_selection(
        tmp_path: Path) -> None:
    from envkit.platform.commands import SubmitRequest, check_submission
    from envkit.platform.errors import SubmitRejected
    from envkit.validate.gate import GateRequest
    from envkit.validate.settings import Settings

    pkg = Path(shutil.copytree(VALID, tmp_path / "pkg"))
    (pkg / ".env").write_text("HF_TOKEN=x\n")
    case = REPO_ROOT / "fixtures" / "packages" / "valid-dataset"
    job = next(REPO_ROOT.glob("fixtures/packages/valid-*/job.json"), None) or \
        next(REPO_ROOT.glob("fixtures/packages/*/job.json"))
    gate = GateRequest(flags=Settings(ignore=("EK210",)))
    with pytest.raises(SubmitRejected) as refused:
        check_submission(SubmitRequest(pkg, case / "data", job, gate=gate))
    codes = {(d.code, d.severity.value) for d in refused.value.diagnostics}
    assert ("EK210", "error") in codes
