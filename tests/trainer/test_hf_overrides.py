"""``hf_config_overrides`` reach the trained policy and the generation engines; the
``policy_backend`` / ``automodel_kwargs`` notices."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from envkit.trainer.config import grpo_config  # noqa: E402
from envkit.trainer.generation.factory import make_backend  # noqa: E402
from envkit.trainer.generation.hf import HFBackend  # noqa: E402
from envkit.trainer.generation.vllm import engine_kwargs  # noqa: E402
from envkit.trainer.hf_overrides import apply_hf_overrides  # noqa: E402
from envkit.trainer.nemo_config import announce_not_applied  # noqa: E402
from envkit.trainer.policy import announce_backend, load_policy  # noqa: E402
from envkit.trainer.sources.gym import gym_source_options  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402


def test_nested_override_lands_in_the_sub_config():
    config = transformers.LlavaConfig()  # a composite config: `text_config` is a LlamaConfig
    unknown = apply_hf_overrides(config, {"text_config": {"rms_norm_eps": 1e-3}})
    assert unknown == []
    assert config.text_config.rms_norm_eps == 1e-3
    assert config.to_dict()["text_config"]["rms_norm_eps"] == 1e-3


def test_unknown_key_is_set_but_warned_with_its_path(caplog):
    config = transformers.LlavaConfig()
    overrides = {"router_aux_loss_coef": 0.0, "text_config": {"router_aux_loss_coef": 0.0}}
    with caplog.at_level(logging.WARNING, logger="envkit.trainer.hf_overrides"):
        unknown = apply_hf_overrides(config, overrides)
    assert unknown == ["router_aux_loss_coef", "text_config.router_aux_loss_coef"]
    assert config.text_config.router_aux_loss_coef == 0.0
    assert "`text_config.router_aux_loss_coef` is not a field of LlamaConfig" in caplog.text


def test_dict_attribute_is_merged_not_replaced():
    config = transformers.LlamaConfig()
    apply_hf_overrides(config, {"rope_parameters": {"rope_theta": 5000.0}})
    assert config.rope_parameters["rope_theta"] == 5000.0
    assert config.rope_parameters["rope_type"] == "default"


OVERRIDES = {"rms_norm_eps": 1e-3, "rope_parameters": {"rope_theta": 500.0}}


def _job(**extra):
    return {"training": {"type": "grpo", "hf_config_overrides": OVERRIDES, **extra}}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def test_policy_and_hf_generation_model_load_the_overrides(model_dir):
    cfg = grpo_config(_job(router_aux_loss_coef=0.0))
    policy = load_policy(model_dir, cfg)
    backend = HFBackend(model_dir, hf_config_overrides=cfg.hf_config_overrides)
    try:
        for config in (policy.model.config, backend.model.config):
            assert config.rms_norm_eps == 1e-3
            assert config.rope_parameters["rope_theta"] == 500.0
            assert config.router_aux_loss_coef == 0.0
        norm = policy.model.model.norm
        assert norm.variance_epsilon == 1e-3  # the modules were built from the overridden config
        rotary = backend.model.model.rotary_emb
        assert torch.allclose(rotary.inv_freq[1], torch.tensor(500.0 ** (-2 / 64)))
    finally:
        backend.close()


def test_engine_settings_travel_to_the_generation_backends(model_dir):
    cfg = grpo_config(_job(vllm_tensor_parallel_size=2, vllm_gpu_memory_utilization=0.4))
    opts = gym_source_options(cfg, "vllm")
    hf = make_backend(model_dir, "hf", opts.engine)  # what GymRolloutSource.start builds
    try:
        assert hf.model.config.rms_norm_eps == 1e-3
    finally:
        hf.close()
    assert opts.engine.hf_config_overrides == OVERRIDES
    kwargs = engine_kwargs(
        "m",
        opts.engine.vllm_gpu_memory_utilization,
        opts.engine.vllm_tensor_parallel_size,
        opts.engine.hf_config_overrides,
    )
    assert kwargs["hf_overrides"] == OVERRIDES
    assert kwargs["tensor_parallel_size"] == 2
    assert kwargs["gpu_memory_utilization"] == 0.4
    assert engine_kwargs("m", 0.6, 1, {})["hf_overrides"] is None


def test_backend_choice_and_automodel_kwargs_are_logged(caplog):
    training = {"type": "grpo", "policy_backend": "automodel",
                "automodel_kwargs": {"force_hf": True}}
    cfg = grpo_config({"training": training})
    with caplog.at_level(logging.INFO, logger="envkit.trainer.policy"):
        announce_backend(cfg)
    assert "policy_backend 'automodel' requested" in caplog.text
    assert any("`training.automodel_kwargs`" in line for line in announce_not_applied(cfg))
    caplog.clear()
    dtensor = grpo_config({"training": {"type": "grpo", "policy_backend": "dtensor"}})
    with caplog.at_level(logging.INFO, logger="envkit.trainer.policy"):
        announce_backend(dtensor)
    assert "policy_backend 'dtensor' requested" in caplog.text
    assert announce_not_applied(dtensor) == []
