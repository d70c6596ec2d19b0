"""Generation backends behind ``envkit.policy_server.generation.GenerationBackend``: HF
transformers and vLLM (CPU or GPU)."""
