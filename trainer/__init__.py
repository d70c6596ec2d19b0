"""GRPO training against packaged Gym servers: rollouts, generation backends, loss, loop."""
