"""vLLM's own log records reach stderr, never stdout, in a process envkit's CLI set up: stdout is
for results (``--output-format json``), and vLLM's default handler writes to stdout."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.vllm]

_SCRIPT = """
from envkit.cli._logging import configure_logging
configure_logging(0)
from vllm.config.logging import LoggingConfig
from vllm.logger import configure_logging_if_needed, init_logger
configure_logging_if_needed(LoggingConfig())  # what an engine's start does (LLMEngine)
init_logger("vllm.envkit_test").warning("marker-0f3a")
"""


def test_vllm_logs_go_to_stderr_after_the_cli_sets_up_logging() -> None:
    env = {k: v for k, v in os.environ.items() if k != "VLLM_LOGGING_STREAM"}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "marker-0f3a" not in proc.stdout
    assert "marker-0f3a" in proc.stderr
