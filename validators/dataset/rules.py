"""The EK5xx rule records of the prompt dataset: code, severity, title, why, fix."""

from __future__ import annotations

from envkit.model.diagnostics import Severity
from envkit.validators._base import Rule

__all__ = ["EK500", "EK501", "EK502", "EK503", "EK504", "EK505", "EK506", "EK507", "RULES"]

EK500 = Rule(
    "EK500", Severity.ERROR, "dataset directory lacks `training.jsonl`",
    "Submit checks that the dataset FileSet holds `training.jsonl` and fails without it; "
    "`validation.jsonl` is optional.",
    "Put the training rows in `training.jsonl` at the dataset root (not in a subdirectory).",
)
EK501 = Rule(
    "EK501", Severity.ERROR, "dataset line is not a JSON object",
    "Gym reads one JSON object per line; a line that is not valid UTF-8 JSON, or is a JSON "
    "array/string/number, fails the rollout collection for the whole file.",
    "Write exactly one JSON object per line (JSON Lines), UTF-8 encoded.",
)
EK502 = Rule(
    "EK502", Severity.ERROR, "`responses_create_params.input` missing or not a valid prompt",
    "The prompt goes under `responses_create_params.input` in OpenAI Responses API shape: a "
    "string, or a list of messages whose `role` is system, developer, user or assistant and "
    "whose `content` is a string or a list of content parts. Gym's request model forbids "
    "other keys in `responses_create_params`. Chat-style `messages[]` rows train nothing.",
    'Use `"responses_create_params": {"input": [{"role": "user", "content": "..."}]}`.',
)
EK503 = Rule(
    "EK503", Severity.ERROR, "`agent_ref` missing or not `{type: responses_api_agents, name}`",
    "`agent_ref` routes the row to an agent instance; without a name the row is dropped as "
    "'missing agent_ref', and a `type` other than `responses_api_agents` is rejected.",
    'Add `"agent_ref": {"type": "responses_api_agents", "name": "<agent instance>"}`.',
    when=((Severity.ERROR, "when `agent_ref` or its `name` is missing, or `type` is wrong"),
          (Severity.WARNING, "when only `agent_ref.type` is missing: Gym tolerates it")),
)
EK504 = Rule(
    "EK504", Severity.ERROR, "`agent_ref.name` is not an agent instance of the package",
    "`agent_ref.name` names the Gym instance (the top-level key of a `responses_api_agents` "
    "block), not the implementation directory. An unknown name fails at spin-up with "
    "ServerRefNotFoundError.",
    "Use the top-level key of an agent block in the package's configs (e.g. `verifiers_agent`).",
)
EK505 = Rule(
    "EK505", Severity.ERROR, "`vf_env_id` missing on a verifiers row, or not the manifest's",
    "verifiers_agent loads the environment named by the row's `vf_env_id` (falling back to the "
    "agent config's). A wrong id surfaces only as the environment failing to load in the job; "
    "submit does not check it (the \"GRPO and Reward Environments\" guide).",
    "Set `vf_env_id` on every row to the manifest's `metadata.vf_env_id`.",
    when=((Severity.ERROR, "when `vf_env_id` is not the manifest's (or missing, with no "
                           "agent config naming it)"),
          (Severity.WARNING, "when it is missing and the agent config's, the manifest's, is "
                             "used")),
)
EK506 = Rule(
    "EK506", Severity.WARNING, "`task_idx` missing or duplicated on verifiers rows",
    "verifiers_agent's request model requires an integer `task_idx`; it also groups rollouts "
    "and names results. Duplicates in `training.jsonl` merge distinct tasks. (Repeating a row "
    "in `validation.jsonl` is the documented way to score a prompt k times, so duplicates "
    "there are fine.)",
    "Number the rows: `task_idx` 0..N-1, unique within `training.jsonl`.",
)

EK507 = Rule(
    "EK507", Severity.WARNING, "the reference answer appears in the row's prompt",
    "A row whose prompt already holds its reference answer (`expected_answer`, `answer`, "
    "`ground_truth`, `expected_output` or `solution`, the field the probe's oracle replies "
    "with) teaches the policy to copy a span of the prompt: the reward rises without the task "
    "being learned. Gym's environment authoring checklist and OpenEnv's `no_solution_leakage` "
    "check both look for it. The reference is matched on token boundaries, case and whitespace "
    "ignored; references shorter than `leak-min-chars` (4) are not looked for, since a short "
    "answer (\"4\", \"B\") turns up in prompts by chance. One finding per file: the share of "
    "rows and the first few row numbers.",
    "Remove the answer from the prompt (a worked example in the system prompt should use "
    "another problem), or drop the leaking rows; raise `leak-min-chars` in `[tool.envkit]` if "
    "the matches are short answers that appear by chance.",
)

RULES = (EK500, EK501, EK502, EK503, EK504, EK505, EK506, EK507)
