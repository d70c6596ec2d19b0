"""`envkit prefetch` without Gym: the options it builds for are the ones `envkit smoke`
resolves (flags, else `[tool.envkit]`), and it says when it did nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.gym import PrefetchResult, prefetch_options
from envkit.output.render import render


def test_options_come_from_the_configuration_unless_flags_say_otherwise(tmp_path: Path) -> None:
    (tmp_path / "envkit.toml").write_text('gym-version = "0.6.0"\noffline = true\n')
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    options = prefetch_options(pkg, gym_version=None, offline=None)
    assert (options.gym_version, options.offline) == ("0.6.0", True)
    options = prefetch_options(pkg, gym_version="0.7.0", offline=False)
    assert (options.gym_version, options.offline) == ("0.7.0", False)
    options = prefetch_options(pkg, gym_version=None, offline=None, isolated=True)
    assert (options.gym_version, options.offline) == ("0.7.0", False)


@pytest.mark.parametrize(("built", "offline", "says"), [
    (False, True, "Nothing to do"), (True, True, "Built the server venvs"),
    (True, False, "an --offline run builds its own")])
def test_human_output_says_what_was_done(capsys: pytest.CaptureFixture[str], built: bool,
                                         offline: bool, says: str) -> None:
    result = PrefetchResult("/p", "0.7.0", "/g", False, "/v", built, offline, ("a/b",), 1.0)
    assert render(result, "human") == 0
    assert says in capsys.readouterr().out
