from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # the `support` package: builders, launchers, paths
sys.path.insert(0, str(TESTS.parent / "fixtures"))  # fixtures/wheelfactory.py and friends
