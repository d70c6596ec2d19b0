"""Every command's result and every error, in the format the user chose: human text, JSON,
GitHub annotations, SARIF. Nothing else in envkit writes a result to stdout.
"""
