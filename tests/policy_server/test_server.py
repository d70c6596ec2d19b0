"""Conformance of the policy endpoint with the official ``openai`` client, on a tiny CPU model."""

from __future__ import annotations

import json
import math
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("torch")
openai = pytest.importorskip("openai")

from envkit.policy_server.generation import GenerationError, SamplingParams  # noqa: E402
from envkit.policy_server.server import PolicyServer, sampling_from_request  # noqa: E402
from envkit.trainer.generation.hf import HFBackend, sample_next  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402

MESSAGES = [{"role": "user", "content": "Write the character a 8 times."}]


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> HFBackend:
    return HFBackend(make_tiny_model(tmp_path_factory.mktemp("m") / "tiny"), model_name="tiny")


@pytest.fixture(scope="module")
def server(backend: HFBackend):
    with PolicyServer(backend) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: PolicyServer):
    return openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)


def _post(server: PolicyServer, path: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(server.base_url.removesuffix("/v1") + path,
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_models_lists_the_served_model(client) -> None:
    assert [m.id for m in client.models.list().data] == ["tiny"]


def test_chat_n_max_tokens_logprobs(client) -> None:
    resp = client.chat.completions.create(model="tiny", messages=MESSAGES, n=3, max_tokens=5,
                                          temperature=0.8, logprobs=True, top_logprobs=2, seed=7)
    assert len(resp.choices) == 3
    for choice in resp.choices:
        entries = choice.logprobs.content
        assert 1 <= len(entries) <= 5
        assert all(e.logprob <= 0 and len(e.top_logprobs) == 2 for e in entries)
        assert choice.finish_reason in ("stop", "length")
        assert resp.usage.prompt_tokens > 0


def test_seed_makes_sampling_reproducible(client) -> None:
    def texts() -> list[str]:
        resp = client.chat.completions.create(model="tiny", messages=MESSAGES, n=2,
                                              max_tokens=6, temperature=1.0, seed=11)
        return [c.message.content for c in resp.choices]

    assert texts() == texts()


def test_greedy_is_deterministic_without_seed(client) -> None:
    def text() -> str:
        return client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=6,
                                              temperature=0).choices[0].message.content
    assert text() == text()


def test_token_id_information_is_what_vllm_model_reads(server: PolicyServer, backend) -> None:
    """Gym's vllm_model (return_token_id_information) asks for token_id:<int> logprob tokens and
    reads prompt_token_ids + choices[].token_ids; they must agree with each other and /tokenize."""
    status, body = _post(server, "/v1/chat/completions", {
        "model": "tiny", "messages": MESSAGES, "max_tokens": 4, "temperature": 1.0,
        "logprobs": True, "top_logprobs": 0, "return_tokens_as_token_ids": True})
    assert status == 200
    choice = body["choices"][0]
    ids = [int(e["token"].removeprefix("token_id:")) for e in choice["logprobs"]["content"]]
    assert ids == choice["token_ids"]
    status, tok = _post(server, "/tokenize", {"model": "tiny", "messages": MESSAGES})
    assert status == 200
    assert tok["tokens"] == body["prompt_token_ids"] == backend.encode_prompt(MESSAGES)


def test_logprobs_match_a_full_forward_pass(backend) -> None:
    import torch

    (out,) = backend.generate([MESSAGES], SamplingParams(temperature=0.7, max_tokens=6, seed=3))
    comp = out.completions[0]
    ids = torch.tensor([[*out.prompt_token_ids, *comp.token_ids]])
    with torch.no_grad():
        logp = torch.log_softmax(backend.model(input_ids=ids).logits[0].float() / 0.7, -1)
    start = len(out.prompt_token_ids) - 1
    ref = [logp[start + i, t].item() for i, t in enumerate(comp.token_ids)]
    assert all(math.isclose(a, b, abs_tol=1e-4) for a, b in zip(ref, comp.logprobs, strict=True))


def test_bad_request_is_a_400_with_an_openai_error(client) -> None:
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model="tiny", messages=MESSAGES, temperature=-1)


def test_prompt_longer_than_the_context_is_a_400(client) -> None:
    long = [{"role": "user", "content": "x" * 1100}]
    with pytest.raises(openai.BadRequestError, match="maximum context length"):
        client.chat.completions.create(model="tiny", messages=long, max_tokens=2)


def test_completions_and_unknown_route(server: PolicyServer) -> None:
    status, body = _post(server, "/v1/completions", {"model": "tiny", "prompt": "ab",
                                                     "max_tokens": 3, "logprobs": 0})
    assert status == 200
    choice = body["choices"][0]
    assert len(choice["logprobs"]["token_logprobs"]) == len(choice["token_ids"])
    assert _post(server, "/v1/nope", {})[0] == 404


def test_sampling_from_request_maps_openai_fields() -> None:
    params = sampling_from_request({"n": 2, "max_completion_tokens": 9, "temperature": 0.5,
                                    "logprobs": True, "stop": "x"})
    assert params == SamplingParams(n=2, temperature=0.5, max_tokens=9, top_logprobs=0, stop=("x",))
    with pytest.raises(GenerationError):
        sampling_from_request({"n": 0})
    with pytest.raises(GenerationError, match="top_k"):
        sampling_from_request({"top_k": -5})


def test_the_servers_top_k_applies_unless_the_request_sets_its_own() -> None:
    assert sampling_from_request({}, top_k=50).top_k == 50  # Gym's agents send no top_k
    assert sampling_from_request({"top_k": 5}, top_k=50).top_k == 5  # vLLM's request field
    assert sampling_from_request({"top_k": -1}, top_k=50).top_k is None  # vLLM's "every token"
    assert sampling_from_request({}).top_k is None


def _greedy(backend: HFBackend) -> tuple[int, ...]:
    params = SamplingParams(temperature=0, max_tokens=6)
    return backend.generate([MESSAGES], params)[0].completions[0].token_ids


def test_top_k_one_samples_the_greedy_tokens(backend: HFBackend) -> None:
    for seed in (1, 2, 3):
        params = SamplingParams(temperature=1.0, top_k=1, max_tokens=6, seed=seed)
        comp = backend.generate([MESSAGES], params)[0].completions[0]
        assert comp.token_ids == _greedy(backend)
        assert comp.logprobs == pytest.approx([0.0] * len(comp.token_ids))  # one token left


def test_top_k_draws_only_the_k_likeliest_and_renormalises() -> None:
    import torch

    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(0))
    allowed = logits.topk(3, dim=-1).indices
    generator = torch.Generator().manual_seed(1)
    params = SamplingParams(temperature=0.7, top_k=3)
    for _ in range(100):
        tokens, logprobs, table = sample_next(logits, params, generator)
        assert (allowed == tokens[:, None]).any(-1).all()
    assert torch.isfinite(table).sum(-1).tolist() == [3, 3, 3, 3]
    assert table.exp().sum(-1).tolist() == pytest.approx([1.0] * 4)
    drawn = table.gather(-1, tokens[:, None]).squeeze(-1)
    assert logprobs.tolist() == pytest.approx(drawn.tolist())


def test_a_server_started_with_top_k_one_answers_greedily(backend: HFBackend) -> None:
    with PolicyServer(backend, top_k=1) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        text = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=6,
                                              temperature=1.0, seed=9).choices[0].message.content
    assert text == backend.decode(_greedy(backend))


def test_seeded_requests_sample_the_same_in_any_arrival_order(server: PolicyServer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def ids(seed: int) -> list[int]:
        status, body = _post(server, "/v1/chat/completions", {
            "model": "tiny", "messages": MESSAGES, "max_tokens": 6, "temperature": 1.0,
            "seed": seed})
        assert status == 200
        return body["choices"][0]["token_ids"]

    seeds = list(range(100, 108))
    alone = {seed: ids(seed) for seed in seeds}
    with ThreadPoolExecutor(max_workers=8) as pool:  # concurrent, as Gym's rollouts arrive
        together = dict(zip(seeds[::-1], pool.map(ids, seeds[::-1]), strict=True))
    assert together == alone
    assert len({tuple(v) for v in alone.values()}) > 1  # the seeds do draw different samples


def test_update_weights_changes_generation(tmp_path: Path) -> None:
    import torch

    backend = HFBackend(make_tiny_model(tmp_path / "m"))
    params = SamplingParams(temperature=0, max_tokens=4)
    before = backend.generate([MESSAGES], params)[0].completions[0].token_ids
    state = {k: torch.zeros_like(v) for k, v in backend.model.state_dict().items()}
    state["lm_head.weight"] = state["model.embed_tokens.weight"] = torch.zeros_like(
        backend.model.state_dict()["model.embed_tokens.weight"])
    backend.update_weights(state)
    after = backend.generate([MESSAGES], params)[0].completions[0].token_ids
    assert after != before or before == (0, 0, 0, 0)
