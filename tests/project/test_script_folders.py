"""Scripts envkit runs by path in a package's own venv (Gym's verifier-fixture runner, the
verifiers loader) sit in folders with no module named like a standard-library one.

Why: ``python path/to/script.py`` puts the script's folder first on ``sys.path``; a sibling
``signal.py`` once shadowed the standard ``signal`` there, and every fixture run died importing
asyncio. The runners are also started with ``-P``/``-I``; this keeps the folders safe when a
caller forgets.
"""

from __future__ import annotations

import sys

from support.paths import REPO_ROOT

SCRIPTS = ("envkit/probe/phases/fixture_runner.py", "converters/_vf_loader.py")


def test_no_sibling_of_a_runner_shadows_the_standard_library() -> None:
    for script in SCRIPTS:
        folder = (REPO_ROOT / script).parent
        names = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir()
                                                       if (p / "__init__.py").is_file()}
        shadowing = names & set(sys.stdlib_module_names)
        assert not shadowing, (script, shadowing)
