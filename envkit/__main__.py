"""``python -m envkit``: the same entry as the ``envkit`` console script."""

import sys

from envkit.cli import main

sys.exit(main())
