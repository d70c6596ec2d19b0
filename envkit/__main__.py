"""``python -m envkit``."""

import sys

from envkit.cli import main

sys.exit(main())
