"""Talk to NeMo Platform: FileSets for packages and datasets, GRPO jobs, their status and metrics.

A small ``httpx`` client: the platform's own client ships inside the whole ``nemo-platform``
wheel, which needs CPython 3.12+ and pulls the services' dependencies.
"""

from __future__ import annotations

from envkit.platform.connection import Connection, resolve_connection
from envkit.platform.errors import PlatformError

__all__ = ["Connection", "PlatformError", "resolve_connection"]
