"""The ``envkit`` command: ``main`` sets up logging (for every command that logs) and runs
click's group (``envkit.cli.app``), the one definition of every command and option."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point (the ``envkit`` console script and ``python -m envkit``): the exit status."""
    from envkit.cli._common import LOGS_NOTHING
    from envkit.cli.app import main as click_main

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in LOGS_NOTHING:
        from envkit.cli._logging import configure_logging

        configure_logging(0)
    return click_main(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
