"""`envkit rescore` through REAL Gym servers (nemo-gym 0.7.0): `envkit rollout -o` records what
a rescore needs (run.json beside Gym's rows with their full responses); rescoring with the
verifier unchanged changes nothing; after a deliberate verifier change it reports exactly the
rows whose reward changed, with no policy running.

The rollout is also `envkit rollout` end to end as the user runs it (its own process): its JSON
follows ``envkit schema rollout``, every row is written with a float reward, the provenance
lies beside the rows, and no process is left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from support.paths import REPO_ROOT
from support.proc_marks import new_mark, survivors
from toy_envs import char_pattern_rows, make_native_package, write_dataset

from envkit.schemas import load_schema
from envkit.trainer.tiny_model import make_tiny_model

pytestmark = [pytest.mark.gym, pytest.mark.network]

ENV = {"ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}  # this machine's 3.13 is older than 3.13.14
_ODD_SCORES_FULL = '''    if len(text) % 2:  # the deliberate change: an odd-length reply scores 1
        return 1.0
'''


def _envkit(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envkit", *map(str, args)],
                          capture_output=True, text=True, timeout=1500, check=False,
                          cwd=REPO_ROOT, env={**os.environ, **ENV})


def _text(record: dict) -> str:
    return "".join(c.get("text", "") for item in record["response"]["output"]
                   if item.get("type") == "message" for c in item.get("content") or [])


_UNSUPPORTED = """class CharPatternConfig(BaseResourcesServerConfig):
    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.UNSUPPORTED
"""
_IMPORTS = ("from typing import ClassVar\n\n"
            "from nemo_gym.base_resources_server import ReverifyMode\n")


def _rescore(run: Path, *args: object, status: int = 0) -> dict:
    proc = _envkit("rescore", run, "--output-format", "json", *args)
    assert proc.returncode == status, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    jsonschema.validate(report, load_schema("rescore"))
    return report


def test_rescore_reports_exactly_the_rows_a_verifier_change_moved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mark = new_mark(monkeypatch)
    pkg = make_native_package(tmp_path / "pkg")
    data = write_dataset(tmp_path / "data", char_pattern_rows(12, chars="ab", target_len=4))
    model = make_tiny_model(tmp_path / "model", seed=0)
    run = tmp_path / "run"
    proc = _envkit("rollout", pkg, "--dataset", data, "--model", model, "--max-tokens", "6",
                   "--concurrency", "4", "-o", run / "rollouts.jsonl", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)  # stdout is the result only
    jsonschema.validate(result, load_schema("rollout"))
    assert (result["rollouts"], result["failed"]) == (12, 0)
    assert result["output"] == str(run / "rollouts.jsonl")
    assert 0.0 <= result["mean_reward"]["char_pattern_simple_agent"] <= 1.0
    provenance = json.loads((run / "provenance.json").read_text())  # next to the rollouts
    jsonschema.validate(provenance, load_schema("provenance"))
    assert provenance["package"]["name"] and provenance["dataset"]["sha256"]
    assert provenance["job"] is None
    assert survivors(mark) == []
    recorded = json.loads((run / "run.json").read_text())
    assert recorded["package"] == str(pkg.resolve()) and recorded["rollouts"] == "rollouts.jsonl"
    rows = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and all("response" in r and "reward" in r for r in rows)
    assert all(isinstance(r["reward"], float) for r in rows)

    same = _rescore(run)
    assert same["package_changed"] is False
    assert same["summary"]["rescored"] == 12 and same["summary"]["changed"] == 0, same
    assert [r["new_reward"] for r in same["rows"]] == [r["reward"] for r in rows]

    app = pkg / "resources_servers" / "char_pattern" / "app.py"
    source = app.read_text()
    anchor = "    if not target_char:\n"
    assert anchor in source
    app.write_text(source.replace(anchor, _ODD_SCORES_FULL + anchor, 1))
    expected = {n for n, r in enumerate(rows, 1) if len(_text(r)) % 2 and r["reward"] != 1.0}
    assert expected, [_text(r) for r in rows]  # the tiny model's replies: some odd, not all 1.0

    moved = _rescore(run, "-o", tmp_path / "rescored.jsonl")
    assert moved["package_changed"] is True
    assert {r["line"] for r in moved["rows"] if r["changed"]} == expected
    assert moved["summary"]["changed"] == len(expected) == moved["summary"]["increased"]
    for row, old in zip(moved["rows"], rows, strict=True):
        assert row["old_reward"] == old["reward"]
        assert row["new_reward"] == (1.0 if row["line"] in expected else old["reward"])
    written = [json.loads(line) for line in (tmp_path / "rescored.jsonl").read_text().splitlines()]
    assert [w["previous_reward"] for w in written] == [r["reward"] for r in rows]
    assert [w["reward"] for w in written] == [r["new_reward"] for r in moved["rows"]]

    # a server that declares its reward depends on per-episode state: refused, with the reason
    config = "class CharPatternConfig(BaseResourcesServerConfig):\n    pass\n"
    assert config in app.read_text()
    future = "from __future__ import annotations\n"
    app.write_text(app.read_text().replace(config, _UNSUPPORTED, 1)
                   .replace(future, future + _IMPORTS, 1))
    refused = _rescore(run, status=1)
    assert refused["summary"]["refused"] == 12 and refused["summary"]["rescored"] == 0
    assert all("reverify_mode 'unsupported'" in r["reason"] for r in refused["rows"])
