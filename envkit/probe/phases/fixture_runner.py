"""Run one resources server's Gym verifier fixture, case by case, in that server's own venv.

Not imported by envkit: ``envkit.probe.phases.fixtures`` runs this file with the server venv's
Python, so the package's code is only imported next to the Gym it was installed with. It may
import nothing from envkit.

Why not Gym's own runner: it stops at the first failing case, so a probe report could not say
which of the other cases hold. This runner gives Gym's own verdict over the whole file
(``gym``), then every case on its own by the same rules (``cases``, from Gym 0.7.0's
``nemo_gym/verifier_fixture.py``).

The cases are read from ``VERIFIER_FIXTURE.cases_path``; else its ``.ndjson`` twin (a
``.jsonl`` cannot ship inside a package); else that path under the dataset directory (where
``envkit build`` moves every ``.jsonl``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any


def _cases_path(named: Path, package_root: Path, dataset: str | None) -> Path | None:
    tries = [named]
    if named.suffix == ".jsonl":
        tries.append(named.with_suffix(".ndjson"))
    if dataset and named.resolve().is_relative_to(package_root.resolve()):
        tries.append(Path(dataset) / named.resolve().relative_to(package_root.resolve()))
    return next((p for p in tries if p.is_file()), None)


async def _case(fixture: Any, case: Any, scale: tuple[float, float, bool], seeded: bool,
                gym: Any) -> dict[str, Any]:
    """One case by Gym's rules: ``passed`` (None: Gym skips it), ``observed``, ``message``."""
    lower, upper, higher = scale
    best, worst = (upper, lower) if higher else (lower, upper)
    out: dict[str, Any] = {"name": case.name, "kind": case.kind,
                           "expected_reward": case.expected_reward,
                           "expected_error": case.expected_error, "observed": [],
                           "passed": None, "message": None}
    if case.kind == "determinism" and not seeded:
        out["message"] = "not run: Gym runs determinism cases only under `determinism: seeded`"
        return out
    try:
        if case.kind == "malformed":
            try:
                await gym._observe(fixture, case, expect_error=True)
            except gym.VerifierFixtureError:
                raise
            except Exception as error:  # the error is what the case expects
                if case.expected_error not in str(error):
                    raise gym.VerifierFixtureError(
                        f"the error did not contain {case.expected_error!r}: {error}") from error
                out["observed_error"] = str(error)[:300]
            else:
                raise gym.VerifierFixtureError("the request did not raise an error")
        else:
            await _scored(fixture, case, (lower, upper, best, worst), out, gym)
    except Exception as error:  # any failure of the case is its verdict
        out["passed"], out["message"] = False, str(error)[:600]
        return out
    out["passed"] = True
    return out


async def _scored(fixture: Any, case: Any, ends: tuple[float, float, float, float],
                  out: dict[str, Any], gym: Any) -> None:
    lower, upper, best, worst = ends
    observed = await gym._observe(fixture, case, reseed=case.kind == "determinism")
    out["observed"].append(observed)
    if not lower <= observed <= upper:
        msg = f"reward {observed} is outside the declared range [{lower}, {upper}]"
        raise gym.VerifierFixtureError(msg)
    if case.kind == "full_reward" and observed != best:
        msg = f"a full-reward case must score the best reward {best}, observed {observed}"
        raise gym.VerifierFixtureError(msg)
    if case.kind == "zero_reward" and observed != worst:
        msg = f"a zero-reward case must score the worst reward {worst}, observed {observed}"
        raise gym.VerifierFixtureError(msg)
    if case.kind == "determinism":
        again = await gym._observe(fixture, case, reseed=True)
        out["observed"].append(again)
        if again != observed:
            msg = f"changed on a fresh server: {observed}, then {again}"
            raise gym.VerifierFixtureError(msg)
    if observed != float(case.expected_reward):
        msg = f"reward {observed}, expected {float(case.expected_reward)}"
        raise gym.VerifierFixtureError(msg)


async def _gym_verdict(fixture: Any, request: dict[str, Any], gym: Any) -> dict[str, Any]:
    """Gym's own check of the whole file, as ``gym env test`` runs it (fail-fast)."""
    try:
        await gym.exercise_verifier_fixture(
            fixture, reward_range=tuple(request["reward_range"]),
            higher_is_better=request["higher_is_better"], determinism=request["determinism"])
    except Exception as error:  # Gym's verdict, whatever it raised
        return {"ok": False, "error": str(error)[:600]}
    return {"ok": True, "error": None}


async def _run(request: dict[str, Any]) -> dict[str, Any]:
    # the server venv's Gym, absent from envkit's own environment
    import nemo_gym.verifier_fixture as gym  # type: ignore[import-not-found]
    from nemo_gym.environment.onboarding import (  # type: ignore[import-not-found]
        _import_resources_server,
    )

    app, root, server = (Path(request[k]) for k in ("app_path", "component_root", "server_dir"))
    out: dict[str, Any] = {"status": "error", "message": None, "fixture_path": None,
                           "gym": None, "cases": []}
    try:
        module = _import_resources_server(app, root, server)
    except Exception as error:  # reported, not raised
        out["message"] = str(error)[:600]
        return out
    fixture = getattr(module, "VERIFIER_FIXTURE", None)
    if fixture is None:
        out["status"] = "no-fixture"
        return out
    if not isinstance(fixture, gym.VerifierFixture):
        out["message"] = "VERIFIER_FIXTURE is not a nemo_gym.verifier_fixture.VerifierFixture"
        return out
    named = Path(fixture.cases_path)
    found = _cases_path(named, Path(request["package_root"]), request.get("dataset"))
    if found is None:
        out["message"] = f"the cases file {named} is not there (nor a .ndjson twin, nor a copy " \
                         "in the dataset directory)"
        out["fixture_path"] = str(named)
        return out
    fixture = dataclasses.replace(fixture, cases_path=found)
    out["fixture_path"] = str(found)
    out["gym"] = await _gym_verdict(fixture, request, gym)
    try:
        cases = gym.load_verifier_fixture(found)
    except gym.VerifierFixtureError as error:
        out["message"] = str(error)[:600]
        return out
    lower, upper = (float(v) for v in request["reward_range"])
    scale = (lower, upper, bool(request["higher_is_better"]))
    seeded = request["determinism"] == "seeded"
    lines = [n for n, text in enumerate(found.read_text(encoding="utf-8").splitlines(), 1)
             if text.strip()]
    out["cases"] = [await _case(fixture, c, scale, seeded, gym) | {"line": n}
                    for c, n in zip(cases, lines, strict=False)]
    out["status"] = "ran"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--request", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    args = parser.parse_args(argv)
    request = json.loads(args.request.read_text(encoding="utf-8"))
    result = asyncio.run(_run(request))
    args.result.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
