"""Training metrics as envkit keeps them for local runs and platform jobs alike: one record per
step (``metrics.jsonl``) and the reward-curve PNG, drawn by one function for both.
"""
