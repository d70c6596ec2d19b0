"""``-v`` shows envkit's debug trace, ``-vv`` every library's too: one library's debug records
(matplotlib scores each font file it finds) once buried envkit's ``-v`` in hundreds of lines."""

from __future__ import annotations

import logging

import pytest

from envkit.cli._logging import configure_logging


@pytest.fixture(autouse=True)
def _restore_logging():
    yield
    configure_logging(0)
    logging.getLogger("envkit").setLevel(logging.NOTSET)


@pytest.mark.parametrize(("verbosity", "ours", "theirs"), [
    (0, False, False), (1, True, False), (2, True, True)])
def test_debug_records_by_verbosity(capsys: pytest.CaptureFixture[str], verbosity: int,
                                    ours: bool, theirs: bool) -> None:
    configure_logging(verbosity)
    logging.getLogger("envkit.probe.run").debug("ours")
    logging.getLogger("matplotlib.font_manager").debug("theirs")
    logging.getLogger("matplotlib.font_manager").info("their info")
    err = capsys.readouterr().err
    assert ("envkit: debug: ours" in err) is ours
    assert ("envkit: debug: theirs" in err) is theirs
    assert "their info" in err  # a library's info and warnings show as before
