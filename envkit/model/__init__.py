"""Everything envkit reads, read once: the package, its wheels, YAML, requirement files, the
dataset, the job file and its spec, the install target, the Gym release's facts, findings.

Readers here are lenient (they record what they could not read instead of raising) and never
execute package code; the validators turn what they recorded into diagnostics.
"""
