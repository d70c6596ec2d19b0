"""Wheel filename tags in words, for EK401: what a wheel is built for.

Why: ``cp313-cp313-manylinux_2_28_aarch64`` is exact but has to be decoded; the message says
"a CPython 3.13 wheel for aarch64 Linux with glibc >= 2.28" next to the target in the same
words, so the mismatch reads at a glance (PEP 425 tags, PEP 600/656 platform tags).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envkit.model.wheelfile import WheelFile

__all__ = ["built_for"]

_PLATFORM_WORDS = (
    (re.compile(r"manylinux_(\d+)_(\d+)_(\w+)"), "{2} Linux with glibc >= {0}.{1}"),
    (re.compile(r"manylinux(2014)_(\w+)"), "{1} Linux with glibc >= 2.17"),
    (re.compile(r"manylinux(2010)_(\w+)"), "{1} Linux with glibc >= 2.12"),
    (re.compile(r"manylinux(1)_(\w+)"), "{1} Linux with glibc >= 2.5"),
    (re.compile(r"musllinux_(\d+)_(\d+)_(\w+)"), "{2} musl Linux (musl >= {0}.{1})"),
    (re.compile(r"linux_(\w+)"), "{0} Linux (a local build, glibc unknown)"),
    (re.compile(r"macosx_\d+_\d+_(\w+)"), "{0} macOS"),
    (re.compile(r"win_?(\w*)"), "Windows {0}"),
)


def built_for(wheel: WheelFile) -> str:
    """``a CPython 3.12 wheel for x86_64 Linux with glibc >= 2.17`` from the filename tags."""
    tags = sorted(wheel.tags, key=str)  # a frozenset: its order changes with the hash seed
    pythons = dict.fromkeys(_interpreter_words(t.interpreter, t.abi) for t in tags)
    platforms = dict.fromkeys(_platform_words(t.platform) for t in tags)
    return f"a {' / '.join(pythons)} wheel for {' or '.join(platforms)}"


def _interpreter_words(interpreter: str, abi: str) -> str:
    match = re.fullmatch(r"(cp|pp|py)(\d)(\d*)", interpreter)
    if match is None:
        return f"`{interpreter}`"
    kind, major, minor = match.groups()
    name = {"cp": "CPython", "pp": "PyPy", "py": "Python"}[kind]
    version = f"{major}.{minor}" if minor else major
    if abi == "abi3":
        return f"{name} >= {version} (abi3)"
    return f"pure {name} {version}" if kind == "py" else f"{name} {version}"


def _platform_words(platform: str) -> str:
    if platform == "any":
        return "any platform"
    for pattern, words in _PLATFORM_WORDS:
        match = pattern.fullmatch(platform)
        if match is not None:
            return words.format(*match.groups())
    return f"`{platform}`"
