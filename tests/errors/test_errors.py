"""``envkit.errors``: every exception class envkit defines is an ``EnvkitError`` (or listed here
as internal, with the reason), each kind exits as the README documents, and the CLI reads an
error's exit status and JSON fields from the error itself."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re

import pytest
from jsonschema import Draft202012Validator
from support.paths import REPO_ROOT

from envkit.cli import main
from envkit.cli.app import classify
from envkit.errors import (
    KIND_EXITS,
    EnvkitError,
    FailedError,
    InvalidError,
    MissingExtraError,
    UsageError,
)
from envkit.schemas import load_schema

INTERNAL = {
    "envkit.model.jobfile._LongInt": "control flow: an over-long integer becomes EK611",
    "envkit.model._yamlnodes.TooLarge": "control flow: becomes a YamlReadError or EK101",
    "envkit.model._yamlnodes.Unusual": "control flow: the event reader hands over to the node path",
    "envkit.platform.upload._Aborted": "control flow: Ctrl-C mid-upload becomes UploadInterrupted",
    "envkit.init.render.TemplateError": "a template bug (tests render every template): an "
                                        "internal error, not user input",
    "envkit.policy_server.server._HTTPError": "an HTTP reply of the policy server, never raised "
                                              "out",
    "envkit.converters.sandbox.LoadError": (
        "always turned into a ConvertError (vf_load._run); its own `kind` (how the load failed) "
        "is another notion than EnvkitError.kind"),
}
"""Exception classes that never end a command, and why."""

OTHER_EXIT = {
    "envkit.builder.build.BuildError": 2,  # kind "failed" exits 2, as before the one error type
}
"""Documented failures whose exit status is not their kind's (kept for compatibility)."""


PACKAGES = ("envkit", "envkit.validators", "envkit.converters", "envkit.trainer")
"""``envkit`` and the three folders that install into it from outside ``envkit/``."""


def _modules() -> set[str]:
    names = set(PACKAGES)
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        names |= {info.name for info in pkgutil.walk_packages(path, f"{package}.")}
    return names - {"envkit.__main__"}


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in sorted(_modules()):
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module, inspect.isclass):  # its own, not imported ones
            if issubclass(obj, BaseException) and obj.__module__ == name:
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


CLASSES = _exception_classes()
DOCUMENTED = sorted(name for name, cls in CLASSES.items() if name not in INTERNAL)


def test_the_walk_finds_the_classes_the_issue_names() -> None:
    names = {cls.__name__ for cls in CLASSES.values()}
    assert {"DynamicSamplingError", "RolloutFailedError", "BuildError", "PlatformError",
            "MissingExtra", "TrainInputError", "GymRuntimeError"} <= names
    assert set(INTERNAL) <= set(CLASSES), "an internal entry names no class: drop it"


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_exception_class_is_an_envkit_error(name: str) -> None:
    assert issubclass(CLASSES[name], EnvkitError), (
        f"{name} is not an EnvkitError: give it the base of its kind (envkit.errors), or list "
        "it in INTERNAL with the reason it never ends a command")


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_kind_exits_as_documented(name: str) -> None:
    cls = CLASSES[name]
    assert issubclass(cls, EnvkitError)
    assert cls.exit_code == OTHER_EXIT.get(name, KIND_EXITS[cls.kind])


def test_kinds_exit_as_the_readme_says() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    assert ("`0` success/valid, `1` invalid or failed, `2` usage, missing extra or internal "
            "error, `130` interrupted" in " ".join(readme.split()))
    assert {k: KIND_EXITS[k] for k in ("invalid", "failed", "usage", "missing-extra",
                                       "internal")} == {
        "invalid": 1, "failed": 1, "usage": 2, "missing-extra": 2, "internal": 2}
    assert set(KIND_EXITS) == set(load_schema("error")["properties"]["error"]["properties"]
                                  ["kind"]["enum"])


@pytest.mark.parametrize(("base", "expected"), [
    (UsageError, (2, "usage")), (MissingExtraError, (2, "missing-extra")),
    (InvalidError, (1, "invalid")), (FailedError, (1, "failed")), (EnvkitError, (1, "failed")),
])
def test_classify_reads_the_class(base: type[EnvkitError], expected: tuple[int, str]) -> None:
    assert classify(base("x")) == expected


def test_the_training_failures_the_issue_names_exit_1() -> None:
    from envkit.trainer.dynamic_sampling import DynamicSamplingError
    from envkit.trainer.sources.base import RolloutFailedError

    assert classify(DynamicSamplingError("x")) == (1, "failed")
    assert classify(RolloutFailedError("x")) == (1, "failed")


def test_a_kind_that_is_not_documented_is_refused_at_class_creation() -> None:
    with pytest.raises(TypeError, match="'usgae'"):
        type("Typo", (EnvkitError,), {"kind": "usgae"})
    with pytest.raises(TypeError, match="'internal'"):
        type("Bug", (EnvkitError,), {"kind": "internal"})


def test_the_fields_the_error_output_reads() -> None:
    plain = FailedError("went wrong")
    assert (plain.message, plain.hint, plain.code, plain.diagnostics, plain.log_tail) == (
        "went wrong", "", None, (), "")
    full = InvalidError("bad", hint="fix it", code="EK200", diagnostics=["d"], log_tail="tail")
    assert (full.hint, full.code, full.diagnostics, full.log_tail) == (
        "fix it", "EK200", ("d",), "tail")


def test_a_builtin_base_is_kept_for_the_callers_that_catch_it() -> None:
    from envkit.model.diagnostics import SelectorError
    from envkit.supply.resolve import ResolveError

    assert issubclass(SelectorError, ValueError) and issubclass(ResolveError, RuntimeError)


def test_errors_module_imports_nothing_from_envkit() -> None:
    tree = ast.parse((REPO_ROOT / "envkit" / "errors.py").read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.split(".")[0] == "envkit"]


def test_no_exception_is_looked_up_by_class_name() -> None:
    source = (REPO_ROOT / "envkit" / "cli" / "__init__.py").read_text()
    assert "__name__ in" not in source and "__mro__" not in source
    assert "EXIT_CODES" not in source  # the table of class names is gone, not renamed


def test_an_envkit_error_from_a_command_is_its_json_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A documented failure: its exit status, one line with the code and hint on stderr, and the
    schema's error object with its kind, hint, code and diagnostics on stdout."""
    import envkit.validate.gate
    from envkit.model.diagnostics import Diagnostic, Severity

    class Refused(InvalidError):
        pass

    diag = Diagnostic("EK200", Severity.ERROR, "rows.jsonl", 3, "prompt data", "move it")

    def refuse(request: object) -> None:
        raise Refused("refused", hint="do this", code="EK200", diagnostics=[diag],
                      log_tail="the evidence")

    monkeypatch.setattr(envkit.validate.gate, "run_gate", refuse)
    pkg = REPO_ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
    rc = main(["validate", str(pkg), "--output-format", "json"])
    out, err = capsys.readouterr()
    assert rc == 1
    data = json.loads(out)
    Draft202012Validator(load_schema("error")).validate(data)
    assert data["error"] == {"kind": "invalid", "type": "Refused", "message": "refused",
                             "hint": "do this", "code": "EK200"}
    assert [d["code"] for d in data["diagnostics"]] == ["EK200"]
    lines = err.splitlines()
    assert lines[0] == "error: EK200 refused" and lines[1] == "  = help: do this"
    assert re.fullmatch(r"rows\.jsonl:3: error\[EK200\] prompt data \(fix: move it\)", lines[2])
    assert lines[3] == "the evidence"
