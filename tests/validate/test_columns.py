"""envkit/validate/columns.py: columns come from what the models recorded on the first read."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.paths import REPO_ROOT

from envkit.model.dataset import load_dataset
from envkit.model.diagnostics import Diagnostic, Severity
from envkit.model.jobfile import load_job
from envkit.model.package import load_package
from envkit.validate.columns import with_columns
from envkit.validators import Inputs

VALID = REPO_ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
SERVER = "resources_servers/echo_match"
CONFIG = f"{SERVER}/configs/echo_match.yaml"


def _at(path: str, line: int, code: str = "EK302") -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, path, line, "m", "h")


def test_columns_come_from_the_models_not_the_files(tmp_path: Path) -> None:
    """Every input is read, then deleted: the columns are still there (nothing re-read)."""
    root = Path(shutil.copytree(VALID, tmp_path / "pkg"))
    (root / SERVER / "requirements.txt").write_text("six\n   requests>=2  # indented\n")
    job = tmp_path / "job.json"
    job.write_text('{\n  "model": "m",\n    "training": {"type": "grpo"}\n}\n')
    inputs = Inputs(package=load_package(root), job=load_job(job))
    shutil.rmtree(root)
    job.unlink()
    found = with_columns([
        _at("nemo-environment.yaml", 3),  # `  - responses_api_models/...`: the item
        _at(CONFIG, 4),  # `      entrypoint: app.py`
        _at(f"{SERVER}/requirements.txt", 2),
        _at("job.json", 3, code="EK609"),
        _at(CONFIG, 999), _at("elsewhere.yaml", 1),
    ], inputs)
    assert [d.column for d in found] == [5, 7, 4, 5, None, None]


def test_a_syntax_error_points_where_the_parser_stopped(tmp_path: Path) -> None:
    root = Path(shutil.copytree(VALID, tmp_path / "pkg"))
    manifest = root / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text() + "extra: [1, 2\n")
    pkg = load_package(root)
    assert pkg.manifest is not None and pkg.manifest.error_line == 9
    (found,) = with_columns([_at("nemo-environment.yaml", 9, "EK101")], Inputs(package=pkg))
    assert found.column == pkg.manifest.error_column == 1


def test_dataset_rows_carry_their_own_column(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "training.jsonl").write_text('{"a": 1}\n    [1]\n')
    rows = list(load_dataset(data).iter_rows("training.jsonl"))
    assert [r.column for r in rows] == [1, 5]
