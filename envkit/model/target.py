"""The install target: the cluster's interpreter and platform, never the builder's.

Tags and markers are generated from the target alone. ``packaging.tags.sys_tags()`` and
``Marker.evaluate()`` without an environment describe the *host*; an aarch64 closure checked on
an x86_64 laptop must not see either (the product spec (section 4)).

Platform tags follow PEP 600 (``manylinux_2_N_<arch>``: a wheel built for glibc 2.N runs on any
glibc >= 2.N of the same arch) and PEP 599/571/513 for the legacy aliases: ``manylinux2014`` is
``manylinux_2_17``, ``manylinux2010`` is ``manylinux_2_12`` and ``manylinux1`` is
``manylinux_2_5`` (the last two exist only for x86_64/i686). Deliberately left out:

- ``musllinux_*``: the training image is glibc based, musl wheels do not load there.
- ``linux_<arch>``: a local build tag (PEP 600 calls it unportable); it says nothing about the
  glibc it needs, so a wheelhouse that carries one is reported instead of trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from envkit.errors import UsageError

if TYPE_CHECKING:
    from packaging.tags import Tag

__all__ = [
    "ARCHES",
    "DEFAULT_GLIBC",
    "GLIBC_MAX",
    "GLIBC_MIN",
    "IMAGE_PATCH",
    "Target",
    "TargetError",
    "platform_tags",
]

ARCHES = ("x86_64", "aarch64")
# Not the spec's 2_17 for x86_64: the pinned Gym version's closure (pyarrow >= 23, pyzmq >= 27.1)
# ships no manylinux_2_17 x86_64 wheels, so an image that installs it has glibc >= 2.28.
DEFAULT_GLIBC = {"x86_64": (2, 28), "aarch64": (2, 28)}
GLIBC_MIN = (2, 17)
GLIBC_MAX = (2, 40)
IMAGE_PATCH = {(3, 13): 14}
"""Patch level assumed for the image's CPython minor: the pinned Gym version declares
``Requires-Python >=3.13.14`` and the image runs it, so its interpreter is at least 3.13.14."""

_LEGACY_ALIASES = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
_LOWEST_MINOR = {"x86_64": 5, "aarch64": 17}
"""Oldest glibc minor a manylinux tag exists for on the arch (aarch64 starts at manylinux2014)."""


class TargetError(UsageError, ValueError):
    """The requested target is not one the training image can be."""


@dataclass(frozen=True)  # no slots: ``functools.cached_property`` needs ``__dict__``
class Target:
    """CPython ``python`` on ``arch`` Linux with glibc >= ``glibc``.

    :raises TargetError: unknown arch, a glibc floor outside 2_17..2_40, or a musl platform.
    """

    arch: str = "x86_64"
    python: tuple[int, int] = (3, 13)
    glibc: tuple[int, int] | None = None
    patch: int | None = None
    """Interpreter patch level; ``None`` means the image's (``IMAGE_PATCH``, else 0)."""

    def __post_init__(self) -> None:
        if self.arch not in ARCHES:
            kind = "musl" if "musl" in self.arch else "unknown"
            msg = f"{kind} target arch {self.arch!r}: the training image is glibc Linux on {ARCHES}"
            raise TargetError(msg)
        if self.glibc is not None and not GLIBC_MIN <= tuple(self.glibc) <= GLIBC_MAX:
            msg = f"glibc floor {self.glibc!r} outside 2_17..2_40"
            raise TargetError(msg)

    @property
    def glibc_floor(self) -> tuple[int, int]:
        return self.glibc or DEFAULT_GLIBC[self.arch]

    @property
    def full_version(self) -> str:
        """``3.13.14``: what ``python_full_version`` and ``Requires-Python`` are checked against."""
        patch = IMAGE_PATCH.get(self.python, 0) if self.patch is None else self.patch
        return f"{self.python[0]}.{self.python[1]}.{patch}"

    @cached_property
    def platforms(self) -> tuple[str, ...]:
        """Platform tags, most specific first (the order pip and uv prefer)."""
        return platform_tags(self.arch, self.glibc_floor)

    def tags(self) -> tuple[Tag, ...]:
        """The full ordered tag list, most preferred first: ``cp313-cp313-*``, abi3 back to
        cp32, ``none``, then ``py3*-none-*`` and ``*-none-any``; never the host's."""
        from packaging.tags import compatible_tags, cpython_tags  # only tags need it

        abi = f"cp{self.python[0]}{self.python[1]}"
        return (*cpython_tags(self.python, [abi], self.platforms),
                *compatible_tags(self.python, abi, self.platforms))

    @cached_property
    def _tag_set(self) -> frozenset[Tag]:
        return frozenset(self.tags())

    def accepts(self, wheel_tags: frozenset[Tag]) -> bool:
        """True when any of a wheel's (decompressed) filename tags is installable here."""
        return not self._tag_set.isdisjoint(wheel_tags)

    def marker_environment(self) -> dict[str, str]:
        """A complete PEP 508 environment for the target: ``Marker.evaluate`` fills any key
        left out from the *host*. The cluster's kernel is unknown: ``platform_release`` and
        ``platform_version`` are ``""``, never the builder's kernel.
        """
        full = self.full_version
        return {
            "implementation_name": "cpython",
            "implementation_version": full,
            "os_name": "posix",
            "platform_machine": self.arch,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": "Linux",
            "platform_version": "",
            "python_full_version": full,
            "python_version": f"{self.python[0]}.{self.python[1]}",
            "sys_platform": "linux",
            "extra": "",
        }

    def __str__(self) -> str:
        major, minor = self.glibc_floor
        return f"cp{self.python[0]}{self.python[1]}-manylinux_{major}_{minor}_{self.arch}"


def platform_tags(arch: str, floor: tuple[int, int]) -> tuple[str, ...]:
    """``manylinux_2_N_<arch>`` for N from the floor down, each legacy alias right after the
    PEP 600 tag it equals (pip's and uv's order).

    >>> platform_tags("aarch64", (2, 18))
    ('manylinux_2_18_aarch64', 'manylinux_2_17_aarch64', 'manylinux2014_aarch64')
    """
    out: list[str] = []
    for minor in range(floor[1], _LOWEST_MINOR[arch] - 1, -1):
        out.append(f"manylinux_{floor[0]}_{minor}_{arch}")
        if minor in _LEGACY_ALIASES:
            out.append(f"{_LEGACY_ALIASES[minor]}_{arch}")
    return tuple(out)

