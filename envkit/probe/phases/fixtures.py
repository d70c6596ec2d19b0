"""The verifier-fixture phase: Gym 0.7's own verifier cases, run in each server's packaged venv.

Why here: a resources server that exports ``VERIFIER_FIXTURE`` carries its author's own
contract for the reward (``gym env test`` checks it); running those cases too, one report says
both what the author promised and what the panel of scripted replies found.

``fixture_runner.py`` runs in a subprocess with each server's venv Python, so the package's
code is never imported by envkit. ``determinism`` is a Gym manifest's for that server, else
``unknown`` (Gym then skips determinism cases).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.probe.analysis.declared import server_blocks
from envkit.probe.analysis.observations import RewardScale
from envkit.probe.inputs import gym_manifests
from envkit.validate.validate import read_package
from envkit.validators.probe import EK809

if TYPE_CHECKING:
    from envkit.model.diagnostics import Diagnostic
    from envkit.model.package import Package
    from envkit.probe.phases import ProbeContext

__all__ = ["RUNNER", "FixtureCase", "FixtureRun", "FixturesResult", "ServerFixture",
           "VerifierFixturePhase", "fixture_servers", "run_fixtures"]

log = logging.getLogger(__name__)

RUNNER = Path(__file__).with_name("fixture_runner.py")
TIMEOUT_S = 600.0
"""One server's whole fixture."""
_RESOURCES = "resources_servers"


@dataclass(frozen=True, slots=True)
class FixtureCase:
    """One case: ``passed`` is None when Gym does not run it (determinism, not ``seeded``)."""

    name: str
    kind: str
    passed: bool | None
    expected_reward: float | None = None
    expected_error: str | None = None
    observed: tuple[float, ...] = ()
    message: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class ServerFixture:
    """One resources server's fixture: ``status`` ``ran``, ``no-fixture`` or ``error``."""

    server: str
    entrypoint: str
    status: str
    message: str | None = None
    fixture_path: str | None = None
    gym_ok: bool | None = None
    gym_error: str | None = None
    """Gym's own verdict on the whole file (fail-fast: the first failure's message)."""
    cases: tuple[FixtureCase, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status != "error" and self.gym_ok is not False and not any(
            c.passed is False for c in self.cases)


@dataclass(frozen=True, slots=True)
class FixturesResult:
    name: str
    servers: tuple[ServerFixture, ...] = ()
    package: str = ""

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for s in self.servers for d in _diagnostics(s, self.package)]

    def to_dict(self) -> dict[str, Any]:
        return {"servers": [{
            "server": s.server, "entrypoint": s.entrypoint, "status": s.status,
            "passed": s.passed, "message": s.message, "fixture_path": s.fixture_path,
            "gym": {"ok": s.gym_ok, "error": s.gym_error},
            "cases": [{**asdict(c), "observed": list(c.observed)} for c in s.cases],
        } for s in self.servers]}


def _where(s: ServerFixture, package: str) -> str:
    """The cases file when it is in the package, else the entrypoint that names it."""
    if s.fixture_path and package:
        try:
            return Path(s.fixture_path).resolve().relative_to(Path(package).resolve()).as_posix()
        except ValueError:
            pass
    return s.entrypoint


def _diagnostics(s: ServerFixture, package: str) -> list[Diagnostic]:
    where = _where(s, package)
    in_pkg = where != s.entrypoint
    shown = where if in_pkg else f"{s.fixture_path or 'its cases'} (named by {s.entrypoint})"
    failed = [c for c in s.cases if c.passed is False]
    causes = {(c.message or "").replace(f"'{c.name}'", "''") for c in failed}
    if len(failed) > 1 and len(causes) == 1 and len(failed) == sum(
            c.passed is not None for c in s.cases):  # one cause (e.g. no server), said once
        return [EK809.at(where, f"{s.server}: every verifier case of {shown} fails the same "
                                f"way: {failed[0].message}")]
    out = []
    for c in failed:
        expected = (f"expected an error containing {c.expected_error!r}"
                    if c.kind == "malformed" else f"expected {c.expected_reward}")
        seen = ", ".join(f"{r:g}" for r in c.observed) or "no reward"
        out.append(EK809.at(where, f"{s.server}: verifier case {c.name!r} ({c.kind}) of "
                                   f"{shown} fails: {c.message} ({expected}, observed "
                                   f"{seen})", line=c.line if in_pkg else None))
    if s.status == "error" or (s.gym_ok is False and not out):
        why = s.message or s.gym_error or "the fixture could not run"
        out.append(EK809.at(where, f"{s.server}: Gym's verifier fixture cannot be checked: "
                                   f"{why}"))
    return out


def fixture_servers(pkg: Package) -> list[tuple[str, str]]:
    """``(implementation, entrypoint path)`` of every shipped resources server whose
    entrypoint names ``VERIFIER_FIXTURE``."""
    shipped = {s.name for s in pkg.servers if s.server_type == _RESOURCES}
    found: dict[str, str] = {}
    for _, _, server_type, impl, body in server_blocks(pkg):
        entry = body.get("entrypoint", "app.py")
        if server_type == _RESOURCES and impl in shipped and isinstance(entry, str):
            found.setdefault(impl, f"{_RESOURCES}/{impl}/{entry}")
    out = []
    for impl, rel in sorted(found.items()):
        try:
            text = (pkg.root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "VERIFIER_FIXTURE" in text:
            out.append((impl, rel))
    return out


def _determinism(pkg: Package, impl: str) -> str:
    for data in gym_manifests(pkg).values():
        if data.get("resources_server") == impl and data.get("determinism") in (
                "seeded", "stochastic", "unknown"):
            return str(data["determinism"])
    return "unknown"


@dataclass(frozen=True, slots=True)
class FixtureRun:
    package: Path
    venv_dir: Path
    dataset: Path | None = None
    scale: RewardScale = field(default_factory=RewardScale)
    timeout_s: float = TIMEOUT_S


def run_fixtures(run: FixtureRun) -> FixturesResult:
    """Every fixture-shipping resources server's cases, each in its own venv."""
    pkg = read_package(run.package)
    servers = [_run_one(run, impl, rel, _determinism(pkg, impl))
               for impl, rel in fixture_servers(pkg)]
    return FixturesResult("fixtures", tuple(s for s in servers if s.status != "no-fixture"),
                          str(run.package))


def _run_one(run: FixtureRun, impl: str, rel: str, determinism: str) -> ServerFixture:
    python = run.venv_dir / _RESOURCES / impl / ".venv" / "bin" / "python"
    if not python.exists():
        return ServerFixture(impl, rel, "error", f"no server venv at {python.parent.parent}")
    root = run.package.resolve()
    server_dir = root / _RESOURCES / impl
    request = {"app_path": str(root / rel), "component_root": str(root),
               "server_dir": str(server_dir), "package_root": str(root),
               "dataset": str(run.dataset.resolve()) if run.dataset else None,
               "reward_range": [run.scale.lower, run.scale.upper],
               "higher_is_better": run.scale.higher_is_better, "determinism": determinism}
    with tempfile.TemporaryDirectory(prefix="envkit-fixture-") as tmp:
        req, res = Path(tmp) / "request.json", Path(tmp) / "result.json"
        req.write_text(json.dumps(request), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(server_dir), "PYTHONDONTWRITEBYTECODE": "1"}
        log.info("probe: verifier fixture of %s in %s", impl, python)
        try:
            # -P: the runner's own folder (envkit/probe/) never lands on sys.path, where a
            # module could shadow the standard library's for the package's code
            proc = subprocess.run([str(python), "-P", str(RUNNER), "--request", str(req),
                                   "--result", str(res)], cwd=server_dir, env=env,
                                  capture_output=True, text=True, timeout=run.timeout_s,
                                  check=False)
        except subprocess.TimeoutExpired:
            return ServerFixture(impl, rel, "error", f"no verdict within {run.timeout_s:g} s")
        if not res.is_file():
            tail = (proc.stderr or proc.stdout)[-600:].strip()
            return ServerFixture(impl, rel, "error",
                                 f"the runner exited {proc.returncode} without a verdict: {tail}")
        return _parse(impl, rel, json.loads(res.read_text(encoding="utf-8")))


def _parse(impl: str, rel: str, data: Mapping[str, Any]) -> ServerFixture:
    gym = data.get("gym") or {}
    cases = tuple(FixtureCase(
        str(c["name"]), str(c["kind"]), c.get("passed"), c.get("expected_reward"),
        c.get("expected_error"), tuple(float(r) for r in c.get("observed") or ()),
        c.get("message"), c.get("line")) for c in data.get("cases") or ())
    return ServerFixture(impl, rel, str(data.get("status", "error")), data.get("message"),
                         data.get("fixture_path"), gym.get("ok"), gym.get("error"), cases)


class VerifierFixturePhase:
    """Needs no running server: only the package and the venvs the bring-up built."""

    name = "fixtures"

    def run(self, ctx: ProbeContext) -> FixturesResult:
        venv_dir = ctx.live.venv_dir
        if venv_dir is None:
            return FixturesResult(self.name)
        return run_fixtures(FixtureRun(ctx.live.package, venv_dir, ctx.dataset, ctx.scale))

