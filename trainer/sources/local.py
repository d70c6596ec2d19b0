"""The local rollout source: HF ``generate`` on the policy itself plus a Python reward function.

Fast tests and the Ray unit tests train through it; real runs use the Gym source
(``sources/gym.py``). Both return :class:`envkit.gym.rollout.Rollout`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from envkit.gym import Rollout
from envkit.trainer.policy import model_mode

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from envkit.trainer.generation.refit import ProbeCheck
    from envkit.trainer.policy import Policy

__all__ = ["LocalRolloutSource", "local_source", "row_messages"]


def row_messages(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Chat messages of a Gym rollout row (``responses_create_params.input``)."""
    value = row.get("responses_create_params", {}).get("input")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if isinstance(value, list):
        return [{"role": m["role"], "content": m.get("content", "")} for m in value]
    msg = "row has no `responses_create_params.input` string or message list"
    raise ValueError(msg)


class LocalRolloutSource:
    """HF ``generate`` on the policy module itself plus a Python reward ``fn(row, text)``.

    The generator *is* the training module, so ``refresh`` has nothing to copy: the next
    ``generate`` already sees the updated weights. Sampling is plain softmax(logits / T)
    (``top_k=0``, ``top_p=1``) so generation and training logprobs describe one distribution.
    """

    def __init__(
        self,
        policy: Policy,
        reward_fn: Callable[[dict[str, Any], str], float],
        *,
        temperature: float,
        max_new_tokens: int,
    ) -> None:
        self._policy = policy
        self._reward_fn = reward_fn
        self._temperature = temperature
        self._max_new_tokens = max_new_tokens

    def refresh(self, policy: Policy) -> dict[str, float]:
        self._policy = policy
        return {}

    def sleep(self) -> None:
        """Nothing to free: the policy module generates."""

    def restart(self) -> None:
        """Nothing to restart: generation runs in this process."""

    def start(self) -> None:
        """Nothing to bring up: the policy module generates."""

    def close(self) -> None:
        """Nothing to stop."""

    def load_weights(self, state: dict[str, Any], check: ProbeCheck | None = None
                     ) -> dict[str, float]:
        """Weights from another process (the Ray trainer actor) into the generating module
        (``load_state_dict(strict=True)`` checks every name and shape; no probe needed)."""
        with torch.no_grad():
            self._policy.model.load_state_dict(state, strict=True)
        return {}

    def rollouts(
        self, rows: Sequence[dict[str, Any]], num_generations: int, *, first_group: int = 0,
        seed: int | None = None,  # one process: torch's RNG is reseeded every step
    ) -> list[Rollout]:
        tok = self._policy.tokenizer
        prompts = [
            tok.apply_chat_template(row_messages(r), tokenize=False, add_generation_prompt=True)
            for r in rows
        ]
        expanded = [p for p in prompts for _ in range(num_generations)]
        batch = tok(expanded, return_tensors="pt", padding=True, add_special_tokens=False)
        out = self._generate(batch.to(self._policy.model.device))
        width = batch.input_ids.shape[1]
        samples = []
        for i, seq in enumerate(out.sequences):
            row_index = i // num_generations
            prompt_ids = batch.input_ids[i][batch.attention_mask[i].bool()].tolist()
            completion, logprobs, truncated = self._cut(seq[width:], out.logits, i)
            text = tok.decode(completion, skip_special_tokens=True)
            reward = float(self._reward_fn(rows[row_index], text))
            samples.append(
                Rollout(
                    first_group + row_index,
                    tuple(prompt_ids),
                    completion,
                    logprobs,
                    reward,
                    truncated,
                )
            )
        return samples

    def _generate(self, batch: Any) -> Any:
        model = self._policy.model
        with torch.no_grad(), model_mode(model, training=False):
            return model.generate(
                **batch,
                do_sample=True,
                temperature=self._temperature,
                top_k=0,
                top_p=1.0,
                max_new_tokens=self._max_new_tokens,
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=self._policy.tokenizer.pad_token_id,
            )

    def _cut(
        self, new_tokens: torch.Tensor, logits: tuple[torch.Tensor, ...], i: int
    ) -> tuple[tuple[int, ...], tuple[float, ...], bool]:
        """Completion up to and including EOS, its sampler logprobs, whether it hit the cap."""
        eos = self._policy.tokenizer.eos_token_id
        ids: list[int] = []
        logprobs: list[float] = []
        for t, token in enumerate(new_tokens.tolist()):
            logp = torch.log_softmax(logits[t][i].float() / self._temperature, dim=-1)
            ids.append(token)
            logprobs.append(float(logp[token]))
            if token == eos:
                return tuple(ids), tuple(logprobs), False
        return tuple(ids), tuple(logprobs), True


def local_source(
    model_dir: str,
    reward_fn: Callable[[dict[str, Any], str], float],
    temperature: float,
    max_new_tokens: int,
) -> LocalRolloutSource:
    """A LocalRolloutSource over its own plain copy of the model (a Ray actor's generator)."""
    from envkit.trainer.config import GrpoConfig
    from envkit.trainer.policy import load_policy

    policy = load_policy(model_dir, GrpoConfig())
    return LocalRolloutSource(
        policy, reward_fn, temperature=temperature, max_new_tokens=max_new_tokens
    )
