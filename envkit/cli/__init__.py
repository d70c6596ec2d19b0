"""The ``envkit`` command. ``main`` runs the quick path when it reads the arguments
(``envkit.cli.quick``: ``envkit validate`` as hooks run it, without importing click), and
click's group (``envkit.cli.app``) for everything else, with logging set up first.

Why this module holds no click: every ``envkit.cli.*`` import runs it first, and the quick
path exists to not pay for click. Nor does the quick path set up logging unless ``-q``/``-v``
ask for a level: what it runs (the check, the models, the rules, the caches) never logs, and
importing ``logging`` costs more than validating a small package (a test holds that it stays
unimported).
"""

from __future__ import annotations

import sys

from envkit.cli import quick
from envkit.cli._emit import interrupted

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point: the quick path, or logging and click; the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        status = quick.run(args)
    except KeyboardInterrupt:
        return interrupted()
    if status is not None:
        return status
    from envkit.cli._logging import configure_logging
    from envkit.cli.app import main as click_main

    configure_logging(0)
    return click_main(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
