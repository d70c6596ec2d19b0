"""A bad and a good example for a rule's page, as ruff's pages have, taken from the fixtures
rather than written by hand: the bad one is the file a rule's failing fixture
(``fixtures/packages/<CODE>-*/``) is reported at, with the diagnostic envkit prints for it; the
good one is the same file of the valid fixture of the same kind (``valid-native-v1``,
``valid-wheels-v1``, ``valid-adapter-wheels-v1``, ``valid-dataset``, ``valid-job-grpo-lora``),
which validates clean. Both are what the tests run, so an example cannot drift from the code.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

from envkit.model.diagnostics import Diagnostic
from envkit.model.target import Target
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions
from envkit.validators.probe import PROBE_FIXTURES
from envkit.validators.spinup import SPINUP_FIXTURES

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "packages"
VALID = {"native-v1": "valid-native-v1", "wheels-v1": "valid-wheels-v1",
         "adapter-wheels-v1": "valid-adapter-wheels-v1"}
_LANG = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "json", ".py": "python",
         ".toml": "toml", ".txt": "text"}
_CONTEXT = 6
_WHOLE = 24


def _spec(case: Path) -> dict[str, object]:
    spec: dict[str, object] = json.loads((case / "case.json").read_text("utf-8"))
    return spec


def _request(case: Path) -> ValidateRequest:
    spec = _spec(case)
    opts = spec.get("options", {})
    assert isinstance(opts, dict)

    def at(key: str) -> Path | None:
        value = spec.get(key)
        return case / str(value) if value else None

    return ValidateRequest(
        package=at("package"), dataset=at("dataset"), job=at("job"),
        options=CheckOptions(target=Target(arch=opts.get("arch", "x86_64")),
                             gym_version=opts.get("gym_version", "0.7.0"),
                             offline=opts.get("offline", False)),
    )


def _first_case(code: str) -> Path | None:
    for case in sorted(CASES.glob(f"{code}-*/case.json")):
        if not _spec(case.parent).get("setup"):  # a FIFO or a lowered limit: no file to show
            return case.parent
    return None


def _file_of(case: Path, diag: Diagnostic) -> tuple[Path, str] | None:
    """The file a diagnostic points at, and which input holds it (package, dataset, job)."""
    spec = _spec(case)
    for key in ("package", "dataset", "job"):
        base = case / str(spec[key]) if spec.get(key) else None
        if base is None:
            continue
        path = base if base.is_file() else base / diag.path
        if path.is_file() and (base.is_file() or diag.path):
            return path, key
    return None


def _excerpt(path: Path, line: int | None) -> str | None:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if len(lines) > _WHOLE:
        mid = (line or 1) - 1
        lines = lines[max(mid - _CONTEXT, 0): mid + _CONTEXT + 1]
    if any(len(line_) > 300 for line_ in lines) or not lines:
        return None
    return "\n".join(lines)


def _twin_line(bad: Path, good: Path, line: int | None) -> int | None:
    """The line of ``good`` that corresponds to ``line`` of ``bad`` (``None``: the two files
    are too unlike for one to show the fix of the other)."""
    try:
        a = bad.read_text("utf-8").splitlines()
        b = good.read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < 0.6:
        return None
    idx = (line or 1) - 1
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i1 <= idx < max(i2, i1 + 1):
            return j1 + min(idx - i1, max(j2 - j1 - 1, 0)) + 1
    return len(b)


def _fence(path: Path, body: str) -> str:
    return f"```{_LANG.get(path.suffix, 'text')}\n{body}\n```"


def _valid_for(case: Path, fmt: str | None) -> str:
    """The valid package fixture of ``case``'s kind: its format, offline when it is."""
    opts = _spec(case).get("options", {})
    if fmt == "wheels-v1" and isinstance(opts, dict) and opts.get("offline"):
        return "valid-wheels-v1-offline"
    return VALID.get(fmt or "", "valid-native-v1")


def _good_twin(case: Path, rel: Path, key: str, fmt: str | None) -> Path | None:
    name = {"dataset": "valid-dataset", "job": "valid-job-grpo-lora"}.get(key) or _valid_for(
        case, fmt)
    valid = CASES / name
    spec = _spec(valid)
    base = valid / str(spec.get(key) or "")
    twin = base if base.is_file() else base / rel
    return twin if twin.is_file() else None


def _listing(base: Path) -> str | None:
    """The files of an input directory, one per line (``None``: too many to read at a glance)."""
    if not base.is_dir():
        return None
    files = sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())
    return "\n".join(files) if 0 < len(files) <= _WHOLE else None


def _listings(case: Path, fmt: str | None, shown: str) -> list[str]:
    """Bad and good as the inputs' file lists, for a defect in what a directory holds (a file
    missing, a wheel that is the wrong one) rather than in a text file's lines."""
    spec = _spec(case)
    key = next((k for k in ("package", "dataset") if spec.get(k)), None)
    bad = _listing(case / str(spec[key])) if key else None
    if key is None or bad is None:
        return [f"\n```text\n{shown}\n```\n"]
    out = [f"\n**Bad** (the {key}'s files):\n", f"```text\n{bad}\n```", "\n```text", shown,
           "```"]
    twin_name = "valid-dataset" if key == "dataset" else _valid_for(case, fmt)
    twin = CASES / twin_name / str(_spec(CASES / twin_name).get(key) or "")
    good = _listing(twin)
    if good is not None and good != bad:
        out += [f"\n**Good** (the files of `fixtures/packages/{twin_name}`, which validates "
                "clean):\n", f"```text\n{good}\n```"]
    return [*out, ""]


def example(code: str) -> str:
    """The page's "Example" section for ``code`` (a pointer where no file can show it)."""
    where = SPINUP_FIXTURES.get(code) or PROBE_FIXTURES.get(code)
    if where:
        named = where if isinstance(where, str) else ", ".join(where)
        return (f"## Example\n\nA package that fails with {code}: `{named}` "
                "(it is brought up by envkit's tests and must report this code).\n")
    case = _first_case(code)
    if case is None:
        return ""
    report = validate(_request(case))
    diag = next((d for d in report.diagnostics if d.code == code), None)
    if diag is None:
        return ""
    found = _file_of(case, diag)
    shown = f"{diag.path or '.'}{f':{diag.line}' if diag.line else ''}: {diag.code} {diag.message}"
    out = [f"## Example\n\nFrom `fixtures/packages/{case.name}`, which envkit's tests validate:"]
    if found is None:
        return "\n".join(out + _listings(case, report.format, shown))
    path, key = found
    bad = _excerpt(path, diag.line)
    rel = path.relative_to(case / str(_spec(case)[key])) if path != case / str(
        _spec(case)[key]) else Path(path.name)
    if bad is None:
        return "\n".join(out + _listings(case, report.format, shown))
    out += [f"\n**Bad** (`{rel}`):\n", _fence(path, bad), "\n```text", shown, "```"]
    twin = _good_twin(case, rel, key, report.format)
    line = _twin_line(path, twin, diag.line) if twin else None
    good = _excerpt(twin, line) if twin and line else None
    if twin is not None and good is not None and good != bad:
        out += [f"\n**Good** (`{rel}` of `fixtures/packages/{twin.relative_to(CASES).parts[0]}`,"
                " which validates clean):\n", _fence(twin, good)]
    return "\n".join(out) + "\n"
