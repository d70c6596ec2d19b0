"""The EK3xx rule records: code, severity, title, why (Gym's behaviour) and the fix."""

from __future__ import annotations

from envkit.model.diagnostics import Severity
from envkit.model.gym_data import gym_data
from envkit.validators._base import Rule

__all__ = ["AGENTS", "ENVS", "MODELS", "POLICY_MODEL", "RESOURCES", "RULES", "E", "W"]

E, W = Severity.ERROR, Severity.WARNING
POLICY_MODEL = "policy_model"
MODELS, RESOURCES = "responses_api_models", "resources_servers"
AGENTS, ENVS = "responses_api_agents", "environment_servers"
"""The four server types, by the names Gym's configs use."""

EK300 = Rule(
    "EK300", E, "Gym config is not valid YAML or not a mapping",
    "Gym loads each config with OmegaConf and merges mappings; anything else aborts spin-up.",
    "Make the file a YAML mapping of `<instance>: {<server_type>: {<impl>: {...}}}`.",
)
EK301 = Rule(
    "EK301", E, "server block has the wrong shape",
    "A block needs exactly one known server type holding exactly one implementation with an "
    "`entrypoint`. Gym aborts on a near-miss that has an entrypoint (AlmostServerError) and "
    "silently skips the rest, so anything that refers to the block fails "
    "(ServerRefNotFoundError) and the server never runs.",
    "Write `<instance>: {<server_type>: {<impl>: {entrypoint: app.py, ...}}}`.",
    when=((E, "when the block has an `entrypoint` (Gym aborts) or something refers to it"),
          (W, "when nothing refers to it: Gym silently skips it and the server never runs")),
)
EK302 = Rule(
    "EK302", E, "`resources_servers` block without a valid `domain`",
    "Gym validates `domain` against a closed set on every resources server; missing or invalid "
    "makes it an almost-server and spin-up aborts with AlmostServerError.",
    f"Set `domain:` to one of: {', '.join(sorted(gym_data().domains))}.",
)
EK303 = Rule(
    "EK303", E, "invalid `domain` on an agent, model or environment block",
    "Gym 0.7 validates `domain` against the closed set on every server type before it strips "
    "it from non-resources blocks, so an empty or unknown value is an almost-server "
    "(AlmostServerError). A valid value is accepted and ignored.",
    "Remove `domain` from this block (or use a value from the closed set).",
)
EK304 = Rule(
    "EK304", E, "reference to an undefined server instance",
    "Gym resolves every `{type, name}` ref in a server's fields against the merged config and "
    "aborts with ServerRefNotFoundError. Refs nested deeper are not checked at spin-up; they "
    "fail when the server uses them (warning).",
    "Name an instance (top-level key) of that type, or add the config that defines it.",
    when=((E, "for a ref in a server's own fields: Gym checks it at spin-up"),
          (W, "for a ref nested deeper: the server fails when it uses it")),
)
EK305 = Rule(
    "EK305", E, "no `policy_model` instance of type `responses_api_models`",
    "The training job points Gym's `policy_model` at its own vLLM engine; configs refer to it "
    "by that name. Without it spin-up fails: `Available responses_api_models: (none)`.",
    "Add configs/policy_model.yaml (`policy_model: {responses_api_models: {vllm_model: ...}}`) "
    "first in `config_paths`.",
)
EK306 = Rule(
    "EK306", W, "`policy_model` config is not first in `config_paths`",
    "Later configs override earlier ones; the platform guide lists the policy model first so "
    "the job's endpoint is the base every other config builds on.",
    "Move the policy model config to the top of `config_paths`.",
)
EK307 = Rule(
    "EK307", E, "instance defined twice with conflicting bodies",
    "Gym deep-merges all configs: two files that give one instance different server types or "
    "implementations merge into an invalid block (AlmostServerError); differing values are "
    "silently overridden by the later file (warning).",
    "Rename one instance, or keep one definition.",
    when=((E, "when the server types or implementations differ: the merged block is invalid"),
          (W, "when only values differ: the later file's value wins silently")),
)
EK308 = Rule(
    "EK308", E, "implementation directory missing and not a Gym built-in",
    "Gym runs `<server_type>/<impl>/` from the package or, failing that, its own built-ins; "
    "neither exists, so the server cannot start.",
    "Ship `<server_type>/<impl>/` (code + requirements.txt), or use a built-in implementation.",
)
EK309 = Rule(
    "EK309", E, "custom implementation shadows a Gym built-in but has no install marker",
    "Gym recognises a server directory only by `requirements.txt` or `pyproject.toml`; without "
    "one it silently runs its own built-in of the same name and trains the wrong environment.",
    "Add `requirements.txt` to the directory, or rename the implementation.",
)
EK310 = Rule(
    "EK310", E, "`entrypoint` file missing in the implementation directory",
    "Gym starts the server by running `<server_type>/<impl>/<entrypoint>` with the server's "
    "venv interpreter; a missing file fails spin-up.",
    "Ship the entrypoint file, or fix `entrypoint:`.",
)
EK311 = Rule(
    "EK311", W, "`datasets[].jsonl_fpath` points inside the package",
    "Prompt rows cannot ship in the environment package (no `.jsonl` allowed); they go to the "
    "dataset FileSet.",
    "Move the rows to the dataset directory and drop or repoint `jsonl_fpath`.",
)
EK312 = Rule(
    "EK312", W, "policy model endpoint hard-coded",
    "The job injects its own vLLM endpoint as `${policy_base_url}` / `${policy_model_name}`; a "
    "hard-coded value sends rollouts somewhere else.",
    "Use `base_url: ${policy_base_url}`, `api_key: ${policy_api_key}`, "
    "`model: ${policy_model_name}`.",
)
EK313 = Rule(
    "EK313", E, "unresolvable interpolation or `???` left",
    "Gym resolves top-level values and each server's direct fields while it parses the config "
    "(ConfigInterpolationError / ConfigMissingValuesError); nested values fail later, when the "
    "server reads them (warning).",
    "Define the key in a config of the package, give `${oc.env:VAR,default}` a default, or "
    "set the value.",
    when=((E, "in a top-level value or a server's own fields: Gym fails while it parses them"),
          (W, "in a nested value: the server fails when it reads it")),
)
EK314 = Rule(
    "EK314", W, "agent with no `environment_servers` block relaying it",
    "Gym 0.7 generates a legacy_agent relay with a deprecation warning; a later Gym raises "
    "AgentWithoutEnvironmentServerError.",
    "Add `<agent>_environment_server: {environment_servers: {legacy_agent: {entrypoint: app.py, "
    "agent_server: {type: responses_api_agents, name: <agent>}}}}`.",
)
EK315 = Rule(
    "EK315", E, "invalid `datasets[]` entry",
    "Gym validates every dataset entry (DatasetConfig); a bad one makes the whole server an "
    "almost-server and spin-up aborts (AlmostServerError).",
    "Give each entry `name`, `type` and `jsonl_fpath`; `num_repeats >= 1`; a `license` from "
    "Gym's list for train/validation.",
)

EK316 = Rule(
    "EK316", E, "config pulled in by a config's `config_paths` is not found",
    "Gym loads every path in a config's own `config_paths`, from the package (its cwd) or else "
    "from its install root; a path in neither aborts spin-up (ConfigPathNotFoundError).",
    "Ship the config in the package at that path, or drop the entry.",
)

EK317 = Rule(
    "EK317", E, "resources server does not accept the agent's model adapter",
    "A resources server may declare `allowed_model_types`; Gym rejects an agent that pairs it "
    "with a model server of another implementation (UnsupportedModelPairingError). The job's "
    "policy model is the package's `policy_model` implementation (usually `vllm_model`).",
    "Add the model implementation to `allowed_model_types`, or point the agent at a model "
    "server it accepts.",
)

EK318 = Rule(
    "EK318", E, "block lacks a field its Gym built-in requires, or has one of the wrong type",
    "Gym's config parse does not look inside a server's fields; the server validates its block "
    "with its implementation's pydantic model (e.g. `vllm_model`'s VLLMModelConfig requires "
    "`uses_reasoning_parser`) only when it starts, so the package validates, uploads and then "
    "fails at spin-up with a ValidationError. Checked for Gym's built-in implementations the "
    "package does not ship, from the models of the nemo-gym wheel; a wrong type is reported "
    "only where pydantic's lax mode surely rejects it (`\"true\"` is a valid bool).",
    "Add the missing field (the platform guide's policy_model sets "
    "`return_token_id_information: true` and `uses_reasoning_parser: true`), or fix its type.",
)

RULES = (EK300, EK301, EK302, EK303, EK304, EK305, EK306, EK307, EK308, EK309, EK310,
         EK311, EK312, EK313, EK314, EK315, EK316, EK317, EK318)
