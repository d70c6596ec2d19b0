"""The design card's folders ship as ``envkit.*`` sub-packages of one wheel.

Slow: builds the wheel with pypa/build and installs it (with its dependencies) into a fresh
venv with uv, then imports the four packages there. A top-level ``validators`` must not be
installed: it would shadow PyPI's popular ``validators`` package.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.supply.uvcmd import uv_bin

ROOT = REPO_ROOT

pytestmark = pytest.mark.network

_PROBE = """
import importlib.util, json
import envkit, envkit.validators, envkit.converters, envkit.trainer
from envkit.schemas import load_schema
print(json.dumps({
    "files": [m.__file__ for m in (envkit, envkit.validators, envkit.converters, envkit.trainer)],
    "top_level_validators": importlib.util.find_spec("validators") is not None,
    "schemas": sorted(load_schema(n)["title"] for n in ("manifest", "diagnostics", "job")),
}))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The sdist, then the wheel built from it (pypa/build's default), and build's output."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True, capture_output=True, text=True, timeout=600,
    )
    (wheel,) = out.glob("nemo_envkit-*.whl")  # the PyPI name; the import is envkit
    return wheel, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(built: tuple[Path, str]) -> Path:
    return built[0]


def test_build_prints_no_setuptools_configuration_warning(built: tuple[Path, str]) -> None:
    """Every folder Python could import is declared (``envkit.data`` holds only JSON): an
    install that prints setuptools' "Package would be ignored" banner looks broken."""
    log = built[1]
    assert "build_py: byte-compiling" in log or "adding 'envkit/" in log  # the log was captured
    assert "is absent from the `packages` configuration" not in log
    assert "Package would be ignored" not in log


def test_wheel_maps_the_design_card_folders(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for module in ("envkit/validators/__init__.py", "envkit/converters/__init__.py",
                   "envkit/trainer/__init__.py", "envkit/schemas/manifest.schema.json",
                   "envkit/data/gym.json"):
        assert module in names
    assert not any(n.startswith(("validators/", "trainer/", "converters/")) for n in names)


@pytest.fixture(scope="module")
def bare_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """envkit from its wheel without extras: no torch, no psutil, no Ray."""
    uv = uv_bin()
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([uv, "venv", "--no-config", "-q", "--python", sys.executable, str(venv)],
                   check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([uv, "pip", "install", "--no-config", "-q", "--python", str(python), str(wheel)],
                   check=True, timeout=600)
    return venv


def test_fresh_venv_imports_all_four(bare_venv: Path, tmp_path: Path) -> None:
    import json

    venv = bare_venv
    python = venv / "bin" / "python"
    out = subprocess.run([str(python), "-c", _PROBE], check=True, capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    probe = json.loads(out.stdout)
    assert all(str(venv) in f for f in probe["files"]), probe["files"]
    assert probe["top_level_validators"] is False
    assert len(probe["schemas"]) == 3
    cli = subprocess.run([str(venv / "bin" / "envkit"), "rule", "EK105"], capture_output=True,
                         text=True, timeout=60, check=True)
    assert "EK105" in cli.stdout


@pytest.mark.parametrize("command", ["train", "rollout"])
def test_without_the_train_extra_the_install_line_is_named(
    wheel: Path, bare_venv: Path, tmp_path: Path, command: str
) -> None:
    pkg = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
    args = ([str(ROOT / "examples" / "tiny_grpo.json"), "--env", str(pkg)] if command == "train"
            else [str(pkg), "--dataset", str(tmp_path), "--model", str(tmp_path)])
    (tmp_path / "training.jsonl").write_text("")
    done = subprocess.run([str(bare_venv / "bin" / "envkit"), command, *args, "-o",
                           str(tmp_path / "out"), "--output-format", "json"],
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    # installed from a wheel file: the hint names that wheel, not an index it is not on
    line = f"pip install '{wheel}[train]'"
    assert line in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    import json

    error = json.loads(done.stdout)["error"]
    assert error["kind"] == "missing-extra" and error["hint"] == line


def test_init_templates_ship_in_the_wheel(wheel: Path, bare_venv: Path, tmp_path: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "envkit/init/templates/common/dot-pre-commit-config.yaml.tmpl" in names
    done = subprocess.run([str(bare_venv / "bin" / "envkit"), "init", "my-env", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    for path in (".github/workflows/envkit.yml", "resources_servers/my_env/app.py",
                 "resources_servers/my_env/tests/verifier_cases.jsonl", "jobs/grpo.json"):
        assert (tmp_path / "my-env" / path).is_file(), path
