"""EK400-EK408 on packages assembled in tmp_path from the valid fixtures plus synthetic wheels."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from wheelfactory import make_wheel

from envkit.cli import main
from envkit.model import wheelfile
from envkit.model.diagnostics import Severity
from envkit.model.target import Target
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions

FIXTURES = REPO_ROOT / "fixtures" / "packages"
RUNTIME = (
    ("nemo-gym", "0.7.0", {}),
    ("ray", "2.58.0", {"tag": "cp313-cp313-manylinux2014_x86_64", "extras": ("default",)}),
    ("openai", "2.44.0", {}),
    ("pip", "26.0", {}),  # the seed of every server venv (`uv venv --seed`)
    # build requirements of Gym's built-in vllm_model (a pyproject server) that policy_model runs
    ("setuptools", "80.9.0", {}),
    ("setuptools-scm", "9.2.2", {}),
)


def _package(tmp_path: Path, wheels: tuple = (), *, base: str = "valid-wheels-v1",
             requirements: str | None = None) -> Path:
    pkg = tmp_path / "pkg"
    shutil.copytree(FIXTURES / base / "pkg", pkg)
    for old in (pkg / "wheels").glob("*.whl"):
        old.unlink()
    for name, version, kwargs in wheels:
        make_wheel(pkg / "wheels", name, version, **kwargs)
    if requirements is not None:
        (pkg / "resources_servers/echo_match/requirements.txt").write_text(requirements)
    return pkg


def _diags(pkg: Path, *, offline: bool = False, target: Target | None = None,
           gym_version: str = "0.7.0") -> list:
    options = CheckOptions(target or Target("x86_64"), gym_version, offline)
    report = validate(ValidateRequest(package=pkg, options=options, select=("EK4",)))
    return list(report.diagnostics)


def _codes(diags: list) -> list[str]:
    return sorted(d.code for d in diags)


ECHO = ("echo-scorer", "1.0", {})


def test_valid_server_closure_is_clean_by_default(tmp_path: Path) -> None:
    """Without --offline the runtime pins are the index's job: no EK403/EK404/EK405."""
    assert _diags(_package(tmp_path, (ECHO,))) == []


def test_offline_needs_the_runtime_pins(tmp_path: Path) -> None:
    diags = _diags(_package(tmp_path, (ECHO,)), offline=True)
    assert _codes(diags) == ["EK403", "EK403", "EK403", "EK404", "EK405", "EK405"]
    assert all(d.severity is Severity.ERROR for d in diags)
    by_path = {d.message.split("`")[1]: d.path for d in diags}
    assert by_path["pip"] == "wheels/"
    assert by_path["setuptools>=61"] == "configs/policy_model.yaml"  # the built-in vllm_model
    (seed,) = (d for d in diags if "`pip`" in d.message)
    assert "pip <- venv seed (Gym runs `uv venv --seed`)" in seed.message


def test_offline_walks_the_builtin_servers_the_configs_run(tmp_path: Path) -> None:
    """policy_model runs Gym's own vllm_model (pyproject: nemo-gym[dev], setuptools to build
    it); offline its venv needs them from wheels/, online Gym's index has them."""
    pkg = _package(tmp_path, (ECHO, *RUNTIME[:4]))
    assert _diags(pkg) == []
    diags = _diags(pkg, offline=True)
    assert sorted(d.message.split("`")[1] for d in diags) == ["setuptools-scm", "setuptools>=61"]
    assert all((d.code, d.path, d.line) == ("EK403", "configs/policy_model.yaml", 1)
               for d in diags)
    assert "built-in responses_api_models/vllm_model (run by `policy_model`" in diags[0].message


def test_a_shipped_server_dir_replaces_the_builtin(tmp_path: Path) -> None:
    pkg = _package(tmp_path, (ECHO, *RUNTIME[:4]))
    own = pkg / "responses_api_models" / "vllm_model"
    own.mkdir(parents=True)
    (own / "requirements.txt").write_text("-e nemo-gym @ ../../\n")
    assert _diags(pkg, offline=True) == []


def test_offline_clean_with_runtime_wheels(tmp_path: Path) -> None:
    assert _diags(_package(tmp_path, (ECHO, *RUNTIME)), offline=True) == []


@pytest.mark.parametrize(
    ("tag", "target", "reason"),
    [
        ("cp313-cp313-manylinux_2_17_aarch64", Target("x86_64"), "another architecture"),
        ("cp313-cp313-manylinux_2_17_x86_64", Target("aarch64"), "another architecture"),
        ("cp313-cp313-manylinux_2_31_aarch64", Target("aarch64", glibc=(2, 28)), "newer glibc"),
        ("cp313-cp313-musllinux_1_2_x86_64", Target("x86_64"), "musllinux"),
        ("cp313-cp313-linux_x86_64", Target("x86_64"), "local, unportable"),
        ("cp314-abi3-manylinux_2_17_x86_64", Target("x86_64"), "interpreter/ABI"),
        ("cp312-cp312-manylinux_2_17_x86_64", Target("x86_64"), "interpreter/ABI"),
    ],
)
def test_ek401_not_installable(tmp_path: Path, tag: str, target: Target, reason: str) -> None:
    diags = _diags(_package(tmp_path, (("echo-scorer", "1.0", {"tag": tag}),)), target=target)
    assert _codes(diags) == ["EK401"]
    assert f"`echo_scorer-1.0-{tag}.whl` is a " in diags[0].message  # what the wheel is ...
    assert f"but the target is CPython 3.13 on {target.arch} Linux with glibc" in diags[0].message
    assert str(target) in diags[0].message  # ... what the target is, and why they differ
    assert reason in diags[0].message


def test_ek401_says_what_the_wheel_is_and_what_the_target_is(tmp_path: Path) -> None:
    tag = "cp313-cp313-manylinux_2_28_aarch64"
    (diag,) = _diags(_package(tmp_path, (("echo-scorer", "1.0", {"tag": tag}),)))
    assert diag.message == (
        f"`echo_scorer-1.0-{tag}.whl` is a CPython 3.13 wheel for aarch64 Linux with glibc >= "
        "2.28, but the target is CPython 3.13 on x86_64 Linux with glibc 2.28 "
        "(cp313-manylinux_2_28_x86_64): built for another architecture")


def test_ek408_names_the_uninstallable_wheel_that_requires_it(tmp_path: Path) -> None:
    """A wheel only a wrong-platform wheel requires is a follow-on of that wheel's EK401."""
    scorer = ("echo-scorer", "1.0", {"tag": "cp313-cp313-manylinux_2_17_aarch64",
                                     "requires": ("helper-x",)})
    diags = _diags(_package(tmp_path, (scorer, ("helper-x", "1.0", {}))))
    assert _codes(diags) == ["EK401", "EK408"]
    assert diags[1].message.endswith(
        "only `echo_scorer-1.0-cp313-cp313-manylinux_2_17_aarch64.whl` does, which the target "
        "cannot install (see its EK401/EK406): fix that first")


def test_ek401_glibc_floor_ok_when_raised(tmp_path: Path) -> None:
    wheel = ("echo-scorer", "1.0", {"tag": "cp313-cp313-manylinux_2_31_aarch64"})
    assert _diags(_package(tmp_path, (wheel,)), target=Target("aarch64", glibc=(2, 31))) == []


def test_abi3_for_older_minor_is_fine(tmp_path: Path) -> None:
    wheel = ("echo-scorer", "1.0", {"tag": "cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64"})
    assert _diags(_package(tmp_path, (wheel,))) == []


def test_ek400_unreadable(tmp_path: Path) -> None:
    pkg = _package(tmp_path, (ECHO,))
    (pkg / "wheels" / "broken-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04 truncated")
    (pkg / "wheels" / "bad_name.whl").write_bytes(b"")
    diags = _diags(pkg)
    assert _codes(diags) == ["EK400", "EK400"]


def test_ek402_two_versions(tmp_path: Path) -> None:
    diags = _diags(_package(tmp_path, (ECHO, ("echo-scorer", "1.1", {}))))
    assert _codes(diags) == ["EK402"]
    assert "1.0, 1.1" in diags[0].message


def test_multi_arch_package_is_clean_on_both_targets(tmp_path: Path) -> None:
    """Builds for both cluster arches: the installer skips the other one; not EK401/EK402."""
    wheels = (("echo-scorer", "1.0", {"tag": "cp313-cp313-manylinux_2_17_x86_64"}),
              ("echo-scorer", "1.0", {"tag": "cp313-cp313-manylinux_2_17_aarch64"}))
    pkg = _package(tmp_path, wheels)
    assert _diags(pkg, target=Target("x86_64")) == []
    assert _diags(pkg, target=Target("aarch64")) == []
    assert _codes(_diags(pkg, target=Target("aarch64", glibc=(2, 17)))) == []


def test_ek403_warning_then_error_with_chain(tmp_path: Path) -> None:
    pkg = _package(tmp_path, (("echo-scorer", "1.0", {"requires": ("tiny-tok>=1",)}), *RUNTIME))
    (warn,) = _diags(pkg)
    assert (warn.code, warn.severity) == ("EK403", Severity.WARNING)
    assert "needs egress" in warn.message
    assert "tiny-tok>=1 <- echo-scorer==1.0 <- resources_servers/echo_match/requirements.txt:1" in (
        warn.message
    )
    (err,) = _diags(pkg, offline=True)
    assert (err.code, err.severity) == ("EK403", Severity.ERROR)


def test_ek403_server_requirement_line(tmp_path: Path) -> None:
    pkg = _package(tmp_path, (ECHO,), requirements="# deps\necho-scorer==1.0\nrequests>=2\n")
    (diag,) = _diags(pkg)
    assert (diag.code, diag.path, diag.line) == (
        "EK403", "resources_servers/echo_match/requirements.txt", 3
    )


def test_ek403_url_requirement_needs_egress(tmp_path: Path) -> None:
    reqs = "-e nemo-gym[dev] @ ../../\necho-scorer==1.0\nx @ git+https://github.com/o/x.git\n"
    pkg = _package(tmp_path, (ECHO,), requirements=reqs)
    (diag,) = _diags(pkg)
    assert (diag.code, diag.severity, diag.line) == ("EK403", Severity.WARNING, 3)


def test_offline_ray_default_extra_is_walked(tmp_path: Path) -> None:
    ray = ("ray", "2.58.0", {"tag": "cp313-cp313-manylinux2014_x86_64", "extras": ("default",),
                             "requires": ('aiohttp>=3.7; extra == "default"',
                                          'pywin32; sys_platform == "win32"')})
    pkg = _package(tmp_path, (ECHO, RUNTIME[0], ray, *RUNTIME[2:]))
    (diag,) = _diags(pkg, offline=True)
    assert diag.code == "EK403"
    assert "aiohttp>=3.7 <- ray[default]==2.58.0 <- runtime pin" in diag.message


def test_ek404_off_version_and_gym_version_option(tmp_path: Path) -> None:
    pkg = _package(tmp_path, (ECHO, ("nemo-gym", "0.6.0", {})))
    assert _codes(_diags(pkg)) == ["EK404"]
    assert _diags(pkg, gym_version="0.6.0") == []


def test_ek405_off_pins(tmp_path: Path) -> None:
    wheels = (ECHO, ("openai", "2.43.0", {}),
              ("ray", "2.50.0", {"tag": "cp313-cp313-manylinux2014_x86_64"}))
    diags = _diags(_package(tmp_path, wheels))
    assert _codes(diags) == ["EK405", "EK405"]
    assert any("ray[default]>=2.58.0" in d.message for d in diags)


def test_ek406_requires_python(tmp_path: Path) -> None:
    wheel = ("echo-scorer", "1.0", {"requires_python": "<3.12"})
    (diag,) = _diags(_package(tmp_path, (wheel,)))
    assert diag.code == "EK406"
    assert "3.13.14" in diag.message


def test_ek407_traversal(tmp_path: Path) -> None:
    wheel = ("echo-scorer", "1.0", {"files": {"../../etc/evil.py": b"x"}})
    diags = _diags(_package(tmp_path, (wheel,)))
    assert set(_codes(diags)) == {"EK407"}


def test_ek408_dead_weight_and_target_markers(tmp_path: Path) -> None:
    wheels = (("echo-scorer", "1.0", {"requires": ('winlib; sys_platform == "win32"',)}),
              ("winlib", "1", {}), ("unused", "1", {}))
    diags = _diags(_package(tmp_path, wheels))
    assert _codes(diags) == ["EK408", "EK408"]


def test_adapter_env_wheels_are_not_dead_weight(tmp_path: Path) -> None:
    base = "valid-adapter-wheels-v1"
    env = ("reverse-text", "0.1.0", {"requires": ("verifiers>=0.1",)})
    pkg = _package(tmp_path, (env, ("verifiers", "0.1.3", {}), ("stray", "1", {})), base=base)
    assert _codes(_diags(pkg)) == ["EK408"]


def test_adapter_offline_needs_egress_for_the_harness(tmp_path: Path) -> None:
    env = ("reverse-text", "0.1.0", {"requires": ("verifiers>=0.1",)})
    pkg = _package(tmp_path, (env, ("verifiers", "0.1.3", {}), *RUNTIME),
                   base="valid-adapter-wheels-v1")
    (diag,) = _diags(pkg, offline=True)
    assert diag.code == "EK403"
    assert "verifiers @ git+https://github.com/PrimeIntellect-ai/verifiers.git" in diag.message
    assert diag.message.startswith("adapter-wheels-v1 always needs egress")
    # not the generic "vendor the missing wheel (rebuild ...)": no rebuild can follow that
    assert diag.hint.startswith("No rebuild can satisfy this")
    assert "never passes `--offline` (by design)" in diag.hint


def test_pyproject_server(tmp_path: Path) -> None:
    pkg = _package(tmp_path, (ECHO,))
    (pkg / "resources_servers/echo_match/requirements.txt").unlink()
    (pkg / "resources_servers/echo_match/pyproject.toml").write_text(
        '[project]\nname = "echo-match"\nversion = "0"\ndependencies = ["echo-scorer==1.0"]\n'
    )
    assert _diags(pkg) == []


def test_native_v1_wheels_are_not_checked(tmp_path: Path) -> None:
    pkg = _package(tmp_path, base="valid-native-v1")
    make_wheel(pkg / "wheels", "unused", "1", tag="cp313-cp313-win_amd64")
    assert _diags(pkg) == []


def test_offline_pyproject_server_needs_nemo_gym_dev_extra(tmp_path: Path) -> None:
    """Gym installs pyproject servers with ``--no-sources -e .``: ``nemo-gym[dev]`` keeps its
    extra, so offline the dev requirements must be vendored too."""
    gym = ("nemo-gym", "0.7.0", {"extras": ("dev",), "requires": ('pytest; extra == "dev"',)})
    pkg = _package(tmp_path, (ECHO, gym, *RUNTIME[1:]))
    (pkg / "resources_servers/echo_match/requirements.txt").unlink()
    (pkg / "resources_servers/echo_match/pyproject.toml").write_text(
        '[project]\nname = "echo-match"\nversion = "0"\n'
        'dependencies = ["nemo-gym[dev]", "echo-scorer==1.0"]\n'
    )
    (diag,) = _diags(pkg, offline=True)
    assert diag.code == "EK403"
    assert "pytest <- nemo-gym[dev]==0.7.0 <- resources_servers/echo_match/pyproject.toml:4" in (
        diag.message
    )
    (warn,) = _diags(pkg)  # with an index the dev extras are fetched: egress, a warning
    assert (warn.code, warn.severity) == ("EK403", Severity.WARNING)


def test_hostile_metadata_never_raises(tmp_path: Path) -> None:
    wheels = (
        ("echo-scorer", "1.0", {"requires": ("!!! not a requirement", "x; os_name ~= 'a'"),
                                "requires_python": "not a specifier"}),
        ("other", "1.0", {"metadata_name": "different"}),
        ("pre", "1.0rc1", {"files": {"C:/win.py": b"", "/abs.py": b""}}),
    )
    pkg = _package(tmp_path, wheels, requirements="echo-scorer==1.0\n-r\n@@@\nname @\n")
    (pkg / "wheels" / "zero-1.0-py3-none-any.whl").write_bytes(b"")
    codes = set(_codes(_diags(pkg, offline=True)))
    assert {"EK400", "EK407"} <= codes


def test_verify_hashes_flag_catches_same_size_edit_in_big_wheel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = b"a" * (wheelfile.SMALL_WHEEL_BYTES + 1)
    pkg = _package(tmp_path, (("echo-scorer", "1.0", {"files": {"echo_scorer/blob.bin": blob}}),))
    path = next((pkg / "wheels").glob("*.whl"))
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    members["echo_scorer/blob.bin"] = b"b" * len(blob)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    assert main(["validate", str(pkg), "--select", "EK4", "--format", "json"]) == 0
    capsys.readouterr()
    rc = main(["validate", str(pkg), "--select", "EK4", "--format", "json", "--verify-hashes"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert [d["code"] for d in out["diagnostics"]] == ["EK407"]
    assert "blob.bin" in out["diagnostics"][0]["message"]
