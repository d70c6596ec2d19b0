"""One example per command, shown as the last lines of its ``--help`` and in the command
reference (``docs/reference/commands.md``, written by ``scripts/gen_docs.py``).

Why one table, not an ``epilog=`` on each decorator: the group adds them when it loads a
command (``envkit.cli.app``), so every command ends its help the same way, and a command added
without an example fails ``tests/cli/test_help_examples.py`` instead of shipping without one.
A new command adds its line here (keyed by its path below ``envkit``).
"""

from __future__ import annotations

import click

__all__ = ["EXAMPLES", "ROOT_EXAMPLE", "add_examples"]

ROOT_EXAMPLE = "envkit init my-env && cd my-env && envkit build resources_servers/my_env -o package"

EXAMPLES: dict[str, str] = {
    "init": "envkit init my-env --template gym --arch aarch64",
    "validate": "envkit validate package --dataset package-data --offline --output-format github",
    "build": "envkit build resources_servers/my_env --arch aarch64 -o package",
    "convert": "envkit convert package char-pattern-native --to wheels-v1 -o char-pattern-wheels",
    "convert package":
        "envkit convert package char-pattern-native --to wheels-v1 -o char-pattern-wheels",
    "convert verifiers": "envkit convert verifiers --hub-id local/my-env "
                         "--source environments/my_env -o package --dataset-dir package-data",
    "rollout": "envkit rollout package --dataset package-data --model tiny-model --limit 4 "
               "-o rollouts.jsonl",
    "smoke": "envkit smoke package --dataset package-data --offline",
    "prefetch": "envkit prefetch package --offline",
    "rescore": "envkit rescore run --output-format json",
    "probe": "envkit probe package --dataset package-data --job jobs/grpo.json --offline "
             "-o probe-out",
    "profile": "envkit profile package --dataset package-data --model tiny-model "
               "--job jobs/grpo.json -o profile-out --keep 0.1,0.9",
    "train": "envkit train jobs/grpo.json --env package --dataset package-data "
             "--model tiny-model -o run",
    "submit": "envkit submit jobs/grpo.json --env package --dataset package-data "
              "--model default/qwen3-1.7b --wait -o result",
    "job": "envkit job status rl-envkit-1a2b3c4d5e6f",
    "job show": "envkit job show rl-envkit-1a2b3c4d5e6f --output-format json",
    "job status": "envkit job status rl-envkit-1a2b3c4d5e6f",
    "job logs": "envkit job logs rl-envkit-1a2b3c4d5e6f --tail 50 --follow",
    "job metrics": "envkit job metrics rl-envkit-1a2b3c4d5e6f -o result",
    "job wait": "envkit job wait rl-envkit-1a2b3c4d5e6f -o result",
    "job cancel": "envkit job cancel rl-envkit-1a2b3c4d5e6f",
    "schema": "envkit schema manifest > manifest.schema.json",
    "rule": "envkit rule EK105",
}
"""Command path -> one command line that runs as shown (in a project ``envkit init`` wrote)."""


def epilog(example: str) -> str:
    """The help's last lines: ``\\b`` keeps click from re-wrapping the command."""
    return f"\b\nExample:\n  {example}"


def add_examples(command: click.Command, path: str) -> click.Command:
    """``command`` (and its sub-commands) with their examples as the help's last lines; a
    command whose decorator wrote its own epilog keeps it."""
    if not command.epilog and path in EXAMPLES:
        command.epilog = epilog(EXAMPLES[path])
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            add_examples(sub, f"{path} {name}")
    return command
