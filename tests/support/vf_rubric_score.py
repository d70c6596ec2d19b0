"""Score completions with a verifiers env's own rubric, outside any Gym server.

Run with the python of a venv that holds the vendored ``verifiers`` and env wheel:
``python vf_rubric_score.py IN.json OUT.json``. IN is ``{"vf_env_id", "vf_env_args", "items":
[{"prompt", "completion", "answer", "info", "example_id"}]}``; OUT is ``[{"reward",
"metrics"}]`` in the same order. The env is loaded the way Gym's ``verifiers_agent`` loads it
(``vf.load_environment(vf_env_id, **vf_env_args)``), the rubric called directly.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path


async def _score(env: object, item: dict) -> dict:
    import verifiers as vf

    state = vf.State(input=vf.RolloutInput(prompt=item["prompt"], answer=item["answer"],
                                           info=item["info"], example_id=item["example_id"]))
    state["completion"] = item["completion"]
    await env.rubric.score_rollout(state)  # type: ignore[attr-defined]
    return {"reward": state["reward"], "metrics": state["metrics"]}


def main(argv: list[str]) -> int:
    import verifiers as vf

    spec = json.loads(Path(argv[0]).read_text())
    env = vf.load_environment(spec["vf_env_id"], **spec["vf_env_args"])
    scores = [asyncio.run(_score(env, item)) for item in spec["items"]]
    Path(argv[1]).write_text(json.dumps(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
