"""The policy server Gym's ``vllm_model`` talks to: an OpenAI-compatible server over a
generation backend. The backends that need no model (the scripted policies of ``smoke`` and
``probe``) live here too; the trainer plugs its HF and vLLM engines into the same interface.
"""
