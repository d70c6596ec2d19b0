"""The scripted policy as a probe drives it: one server, scripts swapped between batches,
rows told apart by a per-request key."""

from __future__ import annotations

import json
import urllib.request

from envkit.policy_server.scripted import BYTES_PER_TOKEN, Script, ScriptedBackend
from envkit.policy_server.server import PolicyServer


def _ask(server: PolicyServer, messages: list[dict]) -> str:
    body = json.dumps({"messages": messages, "max_tokens": 64}).encode()
    req = urllib.request.Request(f"{server.base_url}/chat/completions", data=body,
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)["choices"][0]["message"]["content"]


def test_scripts_swap_between_batches_on_one_server() -> None:
    q = [{"role": "user", "content": "What is 3 + 5?"}]
    backend = ScriptedBackend(script=Script("floor", {"What is 3 + 5?": "8"}))
    with PolicyServer(backend) as server:
        assert _ask(server, q) == "8"  # the oracle
        with backend.use(Script("wrong")):
            assert _ask(server, q) == "wrong"  # the floor, same servers
        assert _ask(server, q) == "8"  # back to the script before
    assert backend.requests == 3
    assert backend.by_key["What is 3 + 5?"] == 3


def test_a_key_function_tells_rows_with_one_prompt_apart() -> None:
    def by_system(messages: list[dict]) -> str:
        return next((m["content"] for m in messages if m["role"] == "system"), "")

    backend = ScriptedBackend(script=Script("?", {"policy-a": "A", "policy-b": "B"},
                                            key=by_system))
    with PolicyServer(backend) as server:
        user = {"role": "user", "content": "same prompt"}
        assert _ask(server, [{"role": "system", "content": "policy-a"}, user]) == "A"
        assert _ask(server, [{"role": "system", "content": "policy-b"}, user]) == "B"
        assert _ask(server, [user]) == "?"


def test_a_reply_is_budgeted_in_bytes_per_token() -> None:
    """The probe replays reference answers a real policy could write within max_new_tokens:
    with bytes as tokens, a 1,978-byte reference (Gym's equivalence_rule rows) was cut at 64
    bytes per 64 tokens and scored 0, a verdict about envkit, not the server."""
    q = [{"role": "user", "content": "Quote it."}]
    long = "x" * 200
    with PolicyServer(ScriptedBackend(long)) as server:
        assert _ask(server, q) == long[:64]  # a byte is a token: smoke's cheap default
    with PolicyServer(ScriptedBackend(long, bytes_per_token=BYTES_PER_TOKEN)) as server:
        assert _ask(server, q) == long  # 64 tokens x 4 bytes
