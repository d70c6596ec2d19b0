"""The install target: the cluster's interpreter and platform, never the builder's."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ARCHES", "DEFAULT_GLIBC", "Target"]

ARCHES = ("x86_64", "aarch64")
DEFAULT_GLIBC = {"x86_64": (2, 17), "aarch64": (2, 28)}


@dataclass(frozen=True)
class Target:
    """CPython ``python`` on ``arch`` Linux with glibc >= ``glibc``."""

    arch: str = "x86_64"
    python: tuple[int, int] = (3, 13)
    glibc: tuple[int, int] | None = None

    @property
    def glibc_floor(self) -> tuple[int, int]:
        return self.glibc or DEFAULT_GLIBC[self.arch]

    def __str__(self) -> str:
        major, minor = self.glibc_floor
        return f"cp{self.python[0]}{self.python[1]}-manylinux_{major}_{minor}_{self.arch}"
