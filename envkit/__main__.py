"""``python -m envkit``: the same entry as the ``envkit`` console script."""

from envkit.replay import main

main()
