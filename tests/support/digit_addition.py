"""The digit_addition server's own answer parser, loaded by path (it is the server's sibling
file, standard library only, so tests use it without Gym)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from toy_envs import GYM_TREES

__all__ = ["PARSER", "fa"]

PARSER = GYM_TREES / "resources_servers" / "digit_addition" / "final_answer.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("digit_addition_final_answer", PARSER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fa = _load()
