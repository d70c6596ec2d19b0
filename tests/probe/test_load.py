"""The load curve's statistics and verdicts, on hand-made levels."""

from __future__ import annotations

from envkit.probe.analysis.load import LoadLevel, knee, levels_for, percentile, projected_step_s
from envkit.probe.analysis.verdicts import load_diagnostics

WHERE = ("nemo-environment.yaml", None)


def _level(c: int, latencies: list[float], failed: int = 0, wall: float = 1.0) -> LoadLevel:
    return LoadLevel(c, len(latencies) + failed, tuple(latencies), failed, wall,
                     "HTTP 500 from agent: 503 overloaded" if failed else None)


def test_levels_rise_to_the_job() -> None:
    assert levels_for(32) == (1, 2, 4, 8, 16, 32)
    assert levels_for(6) == (1, 2, 4, 6)


def test_percentiles_are_nearest_rank() -> None:
    values = [float(i) for i in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 99)) == (
        50.0, 95.0, 99.0)
    assert percentile([3.0], 99) == 3.0


def test_knee_and_projection() -> None:
    levels = [_level(1, [0.1] * 3, wall=0.3), _level(2, [0.1] * 6, wall=0.3),
              _level(4, [0.2] * 12, wall=0.6), _level(8, [0.4] * 24, wall=1.2)]
    # 10, 20, 20, 20 rollouts/s: 90% of 20 is first reached at 2
    assert knee(levels) == 2
    assert projected_step_s(levels, 32) == 32 / 20


def test_failures_at_or_below_the_job_concurrency_are_an_error() -> None:
    levels = [_level(1, [0.3] * 3), _level(2, [0.3] * 6), _level(4, [0.3] * 6, failed=6),
              _level(8, [0.3] * 6, failed=18)]
    (d,) = load_diagnostics(levels, 8, 600.0, WHERE)
    assert d.code == "EK805" and d.severity.value == "error"
    assert "6/12 at 4" in d.message and "18/24 at 8" in d.message and "503" in d.message


def test_sound_load_has_no_finding() -> None:
    levels = [_level(c, [0.05] * (3 * c)) for c in (1, 2, 4, 8)]
    assert load_diagnostics(levels, 8, 600.0, WHERE) == []


def test_p99_over_the_timeout_warns() -> None:
    levels = [_level(1, [1.0] * 3), _level(4, [1.0] * 11 + [9.0])]
    (d,) = load_diagnostics(levels, 4, 5.0, WHERE)
    assert (d.code, d.severity.value) == ("EK806", "warning")
    assert "9.0s" in d.message
