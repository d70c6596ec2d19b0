"""The ``envkit`` command. ``main`` sets up logging once, runs the quick path when it reads the
arguments (``envkit.cli.quick``: ``envkit validate`` as hooks run it, without importing click),
and click's group (``envkit.cli.app``) for everything else.

Why this module holds no click: every ``envkit.cli.*`` import runs it first, and the quick
path exists to not pay for click.
"""

from __future__ import annotations

import sys

from envkit.cli import quick
from envkit.cli._logging import configure_logging

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point: logging, then the quick path or click; the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    configure_logging(0)
    try:
        status = quick.run(args)
    except KeyboardInterrupt:
        return quick.interrupted()
    if status is not None:
        return status
    from envkit.cli.app import main as click_main

    return click_main(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
