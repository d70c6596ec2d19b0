"""EK8xx: will this package train? What ``envkit probe`` finds on the running servers.

Why rules without checks: a reward that an empty reply can game, that changes between two
calls with the same reply, that is the same for every reply on a row, or a server that fails
at the job's concurrency cannot be seen in the package's files; ``envkit probe`` finds them
on the running servers and reports these codes. ``CHECKS`` is empty: no static pass reports
them. Their failing fixtures: ``PROBE_FIXTURES``, exercised by ``tests/probe/test_probe_gym.py``.
"""

from __future__ import annotations

from envkit.model.diagnostics import Severity
from envkit.validators._base import Check, Rule

__all__ = ["CHECKS", "EK801", "EK802", "EK803", "EK804", "EK805", "EK806", "EK807", "EK808",
           "EK809", "EK810", "EK811", "EK812", "EK813", "PROBE_FIXTURES", "RULES"]

EK801 = Rule(
    "EK801", Severity.ERROR,
    "a content-free reply scores as well as the reference answer (the reward can be gamed)",
    "GRPO maximises whatever the reward pays for. When an empty reply, an echo of the prompt, "
    "long noise, a bare format skeleton (`<think></think>` with junk after it among them), a "
    "plea to the grader or, where the reference is a function call, a call with no name or "
    "the right function with wrong arguments scores as well as the right answer, the policy "
    "learns that shortcut within a few steps (reward hacking) and the run is wasted.",
    "Score the content, not its length, its format or the prompt's own words: extract the "
    "final answer and compare it with the row's reference; rerun `envkit probe PKG --dataset "
    "DATA`. The report shows each reply's mean reward next to the reference's.",
)
EK802 = Rule(
    "EK802", Severity.ERROR, "the reference answer never scores",
    "Replying with each row's own reference answer scored the worst reward on every row. "
    "Either the verifier reads a field the rows do not carry (Gym's request model then "
    "silently uses its default, e.g. an empty `target`), or it expects a rendering no reply "
    "gives, or it is broken: every rollout will score the same and GRPO learns nothing.",
    "Make the rows carry the field the resources server's verify request declares (the "
    "message names it: a field the request model declares and the rows lack, or the one "
    "that made the reference score once copied there), or name the row's reference with "
    "`--oracle-field`, and check that the verifier scores a right answer with the best "
    "reward (`envkit probe PKG --dataset DATA`).",
)
EK803 = Rule(
    "EK803", Severity.ERROR, "the same reply on the same row gets different rewards",
    "A verifier whose reward changes between two calls with the same reply (an unseeded "
    "random number, a time-dependent score, state shared between requests) adds noise that "
    "GRPO's group advantages take for signal. A reward that declares an LLM judge, or a Gym "
    "manifest with `determinism: stochastic`, is expected to vary: then this is a warning.",
    "Seed or remove the randomness in `verify` (or declare the judge); the report names the "
    "rows and replies whose repeated rewards disagree.",
)
EK804 = Rule(
    "EK804", Severity.ERROR, "rows on which every reply gets the same reward (no learning signal)",
    "On a row where the reference answer and every content-free reply score alike, all "
    "samples of a GRPO group get the same reward, their advantages are zero, and the row "
    "contributes no gradient (dynamic sampling drops it). Over the warning threshold "
    "(`probe-dead-rows-warn`) a large part of each batch is wasted; at 100% the job cannot "
    "learn at all (a constant reward; also a reference that never scores when no field the "
    "rows lack explains it, see EK802).",
    "Make the reward depend on the reply (the reference must score better than a wrong or "
    "empty reply); drop rows that cannot be scored.",
)
EK805 = Rule(
    "EK805", Severity.ERROR, "rollouts fail at or below the job's concurrency",
    "A GRPO step sends `batch_size` rollouts at once (times `batch_multiplier` with dynamic "
    "sampling). Gym's agents do not retry an HTTP error from a server: a server that answers "
    "503 or crashes under that load fails those rollouts, and Gym's rollout collection stops "
    "the run. A failure is not a reward of zero.",
    "Let the resources server take the job's concurrency (no in-flight limit below it, more "
    "workers, async I/O), or lower `batch_size`; the report's load curve shows where it "
    "breaks.",
)
EK806 = Rule(
    "EK806", Severity.WARNING, "p99 rollout latency is over the rollout timeout",
    "At the job's concurrency the slowest rollouts take longer than the per-rollout timeout "
    "(`--rollout-timeout`, the time `envkit train` waits for a row): in training those time "
    "out and fail. (The probe waits at least twice that long, so it measures them instead.)",
    "Make `verify` faster (cache, precompute, avoid per-call subprocesses) or raise the "
    "timeout; the report's load curve gives p50/p95/p99 per concurrency.",
)
EK807 = Rule(
    "EK807", Severity.ERROR, "a probe reply made the rollout fail (no reward)",
    "A rollout that errors is not scored, neither here nor in training: Gym's agent raises on "
    "the failed verify, and the rollout collection stops. A verifier that crashes on an "
    "empty, long or malformed reply will crash the job as soon as the policy produces one.",
    "Make `verify` return the worst reward for a reply it cannot parse instead of raising; "
    "the report names the replies and the first failure.",
)
EK808 = Rule(
    "EK808", Severity.WARNING, "no reference answer on the rows: the reward checks need one",
    "The probe's oracle replies with each row's reference answer (`expected_answer`, "
    "`answer`, `ground_truth`, `expected_output`, `solution`). Without one, whether the "
    "reward can be gamed or the rows give a learning signal cannot be judged.",
    "Name the row field that holds the reference with `--oracle-field` (a dotted path for a "
    "nested field), or add it to the rows.",
)

EK809 = Rule(
    "EK809", Severity.ERROR, "a case of the server's own Gym verifier fixture fails",
    "A resources server that exports Gym's `VERIFIER_FIXTURE` ships its author's contract for "
    "the reward: requests that must score the best reward, the worst, or be refused (what "
    "`gym env test` checks). A case that fails means the verifier no longer does what its "
    "author wrote down (a regression, a reward that is not the range's end, a malformed "
    "request that scores instead of raising), or the fixture cannot run at all from the "
    "package (its cases file is missing, or its factory reads a file the package lacks).",
    "Fix the verifier, or the case if the contract changed on purpose; the report gives each "
    "case's expected and observed reward. Ship the cases inside the package as `.ndjson` "
    "(a `.jsonl` cannot ship there), or keep `tests/verifier_cases.jsonl` in the source tree "
    "and pass the dataset `envkit build` wrote (`--dataset DATA`), where it moves them.",
)

EK810 = Rule(
    "EK810", Severity.ERROR,
    "the policy's own replies to a prompt all get the same reward (zero-variance groups)",
    "GRPO samples `num_generations_per_prompt` replies per prompt and learns from how their "
    "rewards differ; when the policy's replies to a prompt all score alike, their advantages "
    "are zero and the prompt contributes no gradient. `envkit probe --model DIR` samples the "
    "job's G replies per prompt from the policy the job starts from and counts such groups: "
    "over the warning threshold (`probe-zero-variance-warn`) that share of every batch is "
    "wasted (or regenerated, with dynamic sampling); at 100% the job cannot learn from this "
    "policy at all.",
    "Give the reward partial credit so near misses score apart, start from a policy that "
    "solves some of the prompts and fails others (a stronger or fine-tuned model), drop "
    "prompts it always or never solves, or raise `num_generations_per_prompt` or "
    "`temperature`; the report gives the share per agent with its sampling interval.",
)
EK811 = Rule(
    "EK811", Severity.ERROR, "dynamic sampling will run out of generation batches",
    "With `use_dynamic_sampling` a step keeps only samples whose group's rewards differ and "
    "generates batches of `num_prompts_per_step x batch_multiplier` prompts until it has "
    "`num_prompts_per_step x G` of them; after `dynamic_sampling_max_gen_batches` more "
    "batches the step fails. With the share of kept samples the policy's replies give, a "
    "step needs more batches than that on average (or never fills), so the job stops in its "
    "first steps.",
    "Raise `dynamic_sampling_max_gen_batches` or `batch_multiplier`, or fix the zero-variance "
    "groups (EK810); the report gives the expected generation batches per step.",
)

EK812 = Rule(
    "EK812", Severity.ERROR,
    "the right answer inside the reasoning scores as well as the reference answer",
    "A reasoning model writes `<think>...</think>` before its answer; Gym's model server makes "
    "that a `reasoning` output item when the package's model config sets "
    "`uses_reasoning_parser`, and leaves it inline in the message text otherwise. A verifier "
    "that finds the right answer anywhere in the reply (the reasoning included) rewards a "
    "reply whose reasoning states the answer and whose final answer is wrong or missing: the "
    "policy learns to hedge in its reasoning instead of committing to an answer. The probe "
    "replies with reasoning that states each row's reference answer followed by a wrong "
    "final answer, and with the reference answer only inside the reasoning.",
    "Grade only the final answer: drop `reasoning` output items and strip "
    "`<think>...</think>` from the message text before extracting the answer (as Gym's "
    "authoring checklist asks of every verifier); rerun `envkit probe PKG --dataset DATA`. "
    "The report gives each reasoning reply's mean reward next to the reference answer's.",
)
EK813 = Rule(
    "EK813", Severity.WARNING,
    "the reference answer after reasoning scores below the bare reference answer",
    "Replying with reasoning (`<think>...</think>`) before each row's reference answer scored "
    "lower than the reference answer alone. Where the reasoning stays inline in the message "
    "text (a reasoning model served without a reasoning parser, `uses_reasoning_parser: "
    "false`), a verifier that does not strip it reads the reasoning as part of the answer, and "
    "every right answer of a reasoning policy scores as a wrong one.",
    "Strip `<think>...</think>` from the reply before grading it, or serve the reasoning "
    "model with a reasoning parser (`uses_reasoning_parser: true` in the package's "
    "`vllm_model` config, so Gym moves the reasoning into its own output item).",
)

RULES: tuple[Rule, ...] = (EK801, EK802, EK803, EK804, EK805, EK806, EK807, EK808, EK809,
                           EK810, EK811, EK812, EK813)
CHECKS: tuple[Check, ...] = ()

PROBE_FIXTURES = {
    "EK801": ("fixtures/probe/gameable_length", "fixtures/probe/gameable_format",
              "fixtures/probe/gameable_echo", "fixtures/probe/gameable_injection"),
    "EK802": ("fixtures/probe/wrong_oracle_field",),
    "EK803": ("fixtures/probe/nondeterministic",),
    "EK804": ("fixtures/probe/constant",),
    "EK805": ("fixtures/probe/breaks_under_load",),
    "EK806": ("fixtures/probe/slow_verify",),
    "EK807": ("tests/probe/test_verdicts.py::test_failed_rollouts_are_counted_not_scored",),
    "EK808": ("tests/probe/test_verdicts.py::test_no_reference_answer",),
    "EK809": ("fixtures/probe/fixture_fails",),
    "EK810": ("tests/probe/test_model_phase.py::test_constant_policy_groups_are_an_error",),
    "EK811": ("tests/probe/test_model_phase.py::test_dynamic_sampling_that_never_fills",),
    "EK812": ("fixtures/probe/reasoning_leak",),
    "EK813": ("fixtures/probe/reasoning_no_strip",),
}
"""Rule -> where it fails: the ``fixtures/probe/<case>`` package that
``tests/probe/test_probe_gym.py`` probes, or (a reply that crashes the verifier, rows without a
reference) the test of the analysis that assigns it."""
