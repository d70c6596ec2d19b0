"""``run.json``: what a run that recorded rollouts needs to have them scored again.

Neither ``rollouts.jsonl`` nor ``provenance.json`` says which package on this machine scored
the rows, nor how its servers were brought up; ``envkit rescore RUN_DIR`` reads this file to
bring them up again and send each recorded response to the current verifier.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from envkit.errors import UsageError
from envkit.supply.atomic import write_text

__all__ = ["ROLLOUTS_FILE", "RUN_FILE", "RunFile", "read_run_file", "write_run_file"]

RUN_FILE = "run.json"
ROLLOUTS_FILE = "rollouts.jsonl"
"""Where ``envkit train`` appends every finished rollout's Gym row, batch by batch."""


@dataclass(frozen=True, slots=True)
class RunFile:
    """One recorded run: ``command`` (``rollout``/``train``), the package directory (absolute)
    and its digest then, the rollouts file (relative to the run directory) and the bring-up."""

    command: str
    package: str
    package_sha256: str | None
    rollouts: str
    gym_version: str
    offline: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"version": "1.0", **asdict(self)}


def write_run_file(run_dir: Path, run: RunFile) -> Path:
    """``run_dir/run.json``, whole or not at all."""
    return write_text(run_dir / RUN_FILE, json.dumps(run.to_json(), indent=2) + "\n")


def read_run_file(run_dir: Path) -> RunFile:
    """The run recorded in ``run_dir``.

    :raises UsageError: no ``run.json``, or one that is not what a run writes.
    """
    path = run_dir / RUN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        msg = (f"{run_dir} holds no {RUN_FILE}: rescore reads the runs `envkit rollout -o FILE` "
               f"and `envkit train -o DIR` record (run one of them again)")
        raise UsageError(msg) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None
    fields = ("command", "package", "rollouts", "gym_version")
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in fields):
        raise UsageError(f"{path}: not a run record (needs {', '.join(fields)})")
    sha = data.get("package_sha256")
    return RunFile(data["command"], data["package"], sha if isinstance(sha, str) else None,
                   data["rollouts"], data["gym_version"], bool(data.get("offline")))
