"""Options and helpers shared by several commands."""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Callable, Iterator
from typing import Any

import click

from envkit.target import ARCHES, Target

__all__ = [
    "parse_codes",
    "parse_glibc",
    "parse_python",
    "sigterm_as_interrupt",
    "target_from",
    "target_options",
]


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises ``KeyboardInterrupt`` while the block runs, as Ctrl-C does.

    Why: Gym's servers and their Ray run in a session of their own (so a terminal's Ctrl-C
    reaches envkit, which tears them down in order); the default SIGTERM action would kill
    envkit alone and orphan them. ``main()`` maps the interrupt to exit status 130.
    """
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def parse_python(value: str) -> tuple[int, int]:
    match = re.fullmatch(r"(?:cp)?3\.?(\d+)", value.strip())
    if not match:
        msg = f"--python must look like 3.13, not {value!r}"
        raise click.BadParameter(msg)
    return 3, int(match.group(1))


def parse_glibc(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    match = re.fullmatch(r"(?:manylinux_)?(\d+)[._](\d+)", value.strip())
    if not match or not (17 <= int(match.group(2)) <= 40) or match.group(1) != "2":
        msg = f"--glibc must be 2_17 .. 2_40 (e.g. 2_28), not {value!r}"
        raise click.BadParameter(msg)
    return 2, int(match.group(2))


def parse_codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """``--select EK1,EK204`` and repeated flags both work, as in ruff."""
    codes = tuple(c.strip().upper() for v in values for c in v.split(",") if c.strip())
    bad = [c for c in codes if not re.fullmatch(r"EK\d{0,3}", c)]
    if bad:
        msg = f"rule codes look like EK105 or a prefix such as EK1, not {', '.join(map(repr, bad))}"
        raise click.BadParameter(msg)
    return codes


def target_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--arch/--python/--glibc``: the cluster's platform, never the builder's."""
    func = click.option("--glibc", default=None, metavar="2_N",
                        help="glibc floor of the cluster, 2_17..2_40 (default 2_28).")(func)
    func = click.option("--python", "python_version", default="3.13", show_default=True,
                        help="Target CPython version.")(func)
    return click.option("--arch", type=click.Choice(ARCHES), default="x86_64", show_default=True,
                        help="Cluster architecture.")(func)


def target_from(arch: str, python_version: str, glibc: str | None) -> Target:
    return Target(arch=arch, python=parse_python(python_version), glibc=parse_glibc(glibc))
