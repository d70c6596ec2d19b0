"""``envkit build`` / ``envkit convert package``: Gym server trees and native packages into
wheels-v1 or native-v1 packages, resolved for the cluster, vendored, locked, validated.
"""

from __future__ import annotations

from envkit.builder.build import BuildError, BuildRequest, BuildResult, build, convert_package

__all__ = ["BuildError", "BuildRequest", "BuildResult", "build", "convert_package"]
