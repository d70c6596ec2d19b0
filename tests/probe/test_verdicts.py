"""The verdicts on hand-made observations: each fixture case's pattern, worked by hand, and
the precedence of a cause over its consequences."""

from __future__ import annotations

from envkit.model.diagnostics import Severity
from envkit.probe.analysis.fields import DeclaredField, FieldSearch
from envkit.probe.analysis.integrity import spreads
from envkit.probe.analysis.observations import Observation, RewardScale, score_table
from envkit.probe.analysis.verdicts import assess_agent
from envkit.probe.policies import panel
from envkit.probe.thresholds import Thresholds

KINDS = {p.name: p.kind for p in panel()}
ORACLES = [n for n, k in KINDS.items() if k == "oracle"]
FREE = [n for n, k in KINDS.items() if k == "content-free"]
ROWS = (1, 2, 3, 4)
WHERE = ("resources_servers/x/configs/x.yaml", 7)


def _obs(rewards: dict[str, list[list[float | None]]]) -> list[Observation]:
    """policy -> per row (ROWS order) the rewards of its repeats; None = a failed rollout."""
    out = []
    for policy, by_row in rewards.items():
        for row, repeats in zip(ROWS, by_row, strict=True):
            for i, r in enumerate(repeats):
                out.append(Observation("agent", policy, row, i, r,
                                       None if r is not None else "HTTP 500 from agent"))
    return out


def _same(value: float | None, repeats: int = 2) -> list[list[float | None]]:
    return [[value] * repeats for _ in ROWS]


DEFAULT_SCALE, DEFAULT_TH = RewardScale(), Thresholds()


def _assess(observations: list[Observation], scale: RewardScale = DEFAULT_SCALE,
            stochastic: str | None = None, th: Thresholds = DEFAULT_TH):
    table = score_table(observations, KINDS)["agent"]
    return assess_agent("agent", table, spreads(observations).get("agent", {}), scale, th,
                        WHERE, stochastic=stochastic)


def _codes(assessment) -> list[tuple[str, str]]:
    return [(d.code, d.severity.value) for d in assessment.diagnostics]


def test_sound_passes() -> None:
    rewards = {n: _same(0.0) for n in KINDS}
    rewards["oracle:bare"] = rewards["oracle:answer-tags"] = _same(1.0)
    a = _assess(_obs(rewards))
    assert _codes(a) == []
    assert a.oracle == "oracle:bare"  # ties go to the first rendering
    assert (a.dead, a.judged) == ((), ROWS)


def test_gameable_by_length_lists_each_reply_within_the_margin() -> None:
    # oracle renderings by length: 6, 23, 14, 14 chars of 200 -> best 0.115 (answer-tags)
    rewards = {"oracle:bare": _same(0.03), "oracle:answer-tags": _same(0.115),
               "oracle:boxed": _same(0.07), "oracle:answer-colon": _same(0.07)}
    rewards |= {n: _same(0.0) for n in FREE}
    rewards |= {"noise": _same(1.0), "echo": _same(0.47), "whitespace": _same(0.02),
                "injection": _same(0.22)}
    a = _assess(_obs(rewards))
    assert _codes(a) == [("EK801", "error")]
    (d,) = a.diagnostics
    assert a.oracle == "oracle:answer-tags"
    # 0.115 - 0.1 = 0.015: whitespace 0.02 is in, empty 0.0 earns nothing and is out
    for name in ("noise", "echo", "injection", "whitespace"):
        assert f"`{name}`" in d.message
    assert "`empty`" not in d.message
    assert (d.path, d.line) == WHERE


def test_margin_edge() -> None:
    base = {n: _same(0.0) for n in KINDS} | {"oracle:bare": _same(1.0)}
    assert _codes(_assess(_obs(base | {"echo": _same(0.9)}))) == [("EK801", "error")]
    assert _codes(_assess(_obs(base | {"echo": _same(0.89)}))) == []


def test_constant_reward_is_dead_rows_only() -> None:
    a = _assess(_obs({n: _same(1.0) for n in KINDS}))
    assert _codes(a) == [("EK804", "error")]  # not also EK801: nothing is scored at all
    assert a.dead == ROWS and a.dead_share == 1.0


def test_wrong_oracle_field_is_the_cause_only() -> None:
    observations = _obs({n: _same(0.0) for n in KINDS})
    table = score_table(observations, KINDS)["agent"]
    a = assess_agent("agent", table, {}, RewardScale(), Thresholds(), WHERE,
                     field_search=FieldSearch(("target", "X")))
    assert _codes(a) == [("EK802", "error")]  # not EK804 nor EK801: their cause is reported
    assert "reads `target`" in a.diagnostics[0].message


def test_a_declared_field_the_rows_lack_is_the_cause() -> None:
    """Copying the reference into `target` did not make it score (say the verifier wants a
    list there), but the verify request declares `target` with an empty default and the
    rows lack it: still the wrong field, not a constant reward."""
    table = score_table(_obs({n: _same(0.0) for n in KINDS}), KINDS)["agent"]
    search = FieldSearch(None, (DeclaredField("target", required=False, default=""),))
    a = assess_agent("agent", table, {}, RewardScale(), Thresholds(), WHERE,
                     field_search=search)
    assert _codes(a) == [("EK802", "error")]
    assert "declares `target` (default '')" in a.diagnostics[0].message


def test_constant_zero_is_dead_rows() -> None:
    """Every reply 0, and no row field makes the reference score: a constant reward."""
    a = _assess(_obs({n: _same(0.0) for n in KINDS}))
    assert _codes(a) == [("EK804", "error")]
    searched = assess_agent("agent", score_table(_obs({n: _same(0.0) for n in KINDS}),
                                                 KINDS)["agent"], {}, RewardScale(),
                            Thresholds(), WHERE, field_search=FieldSearch())
    assert _codes(searched) == [("EK804", "error")]


def test_reference_never_scores_but_content_free_does() -> None:
    rewards = {n: _same(0.0) for n in KINDS} | {"noise": _same(1.0)}
    a = _assess(_obs(rewards))
    assert _codes(a) == [("EK802", "error"), ("EK801", "error")]


def test_nondeterministic_names_the_rows() -> None:
    rewards = {n: [[0.1, 0.15]] * 4 for n in FREE}
    rewards |= {n: [[0.9, 0.95], [0.85, 0.99], [0.9, 0.81], [0.97, 0.93]] for n in ORACLES}
    a = _assess(_obs(rewards))
    assert _codes(a) == [("EK803", "error")]
    assert "dataset line 1, 2, 3, 4" in a.diagnostics[0].message
    assert len(a.unstable) == len(KINDS) * 4


def test_declared_stochastic_makes_spread_a_warning() -> None:
    rewards = {n: _same(0.0) for n in KINDS} | {"oracle:bare": [[1.0, 0.5]] * 4}
    a = _assess(_obs(rewards), stochastic="the package refers to a judge model (x.judge)")
    assert _codes(a) == [("EK803", "warning")]
    assert "judge" in a.diagnostics[0].message


def test_dead_rows_over_the_threshold_warn() -> None:
    # row 1: oracle 1 vs 0; rows 2-4: everything 0 -> 3 of 4 dead = 75% > 50%
    oracle = [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    rewards = {n: _same(0.0) for n in KINDS} | {"oracle:bare": oracle}
    a = _assess(_obs(rewards))
    assert _codes(a) == [("EK804", "warning")]
    assert a.dead == (2, 3, 4) and a.dead_share == 0.75
    # 2 of 4 is not over 50%
    oracle = [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    assert _codes(_assess(_obs(rewards | {"oracle:bare": oracle}))) == []


def test_failed_rollouts_are_counted_not_scored() -> None:
    rewards = {n: _same(0.0) for n in KINDS} | {"oracle:bare": _same(1.0)}
    rewards["empty"] = _same(None)  # the verifier crashes on an empty reply
    rewards["noise"] = [[1.0, None], [None, None], [None, None], [None, None]]
    observations = _obs(rewards)
    table = score_table(observations, KINDS)["agent"]
    assert table["empty"].mean is None and table["empty"].failed == 8
    assert table["noise"].mean == 1.0 and table["noise"].failed == 7  # never 1/8
    a = _assess(observations)
    codes = _codes(a)
    assert ("EK807", "error") in codes
    assert "empty 8" in a.diagnostics[0].message and "HTTP 500" in a.diagnostics[0].message
    # noise's one reward is 1.0 on row 1, as the oracle's: gameable on what was scored
    assert ("EK801", "error") in codes


def test_no_reference_answer() -> None:
    a = _assess(_obs({n: _same(0.0) for n in FREE}))
    assert _codes(a) == [("EK808", "warning")]  # not "all rows dead": nothing to judge by
    assert a.oracle is None and a.judged == ()


def test_lower_is_better_scale() -> None:
    scale = RewardScale(0.0, 1.0, higher_is_better=False)
    rewards = {n: _same(1.0) for n in KINDS} | {"oracle:bare": _same(0.0)}
    assert _codes(_assess(_obs(rewards), scale)) == []
    # the reference gets the worst (1.0) everywhere while noise gets the best (0.0)
    never = _assess(_obs({n: _same(1.0) for n in KINDS} | {"noise": _same(0.0)}), scale)
    assert _codes(never) == [("EK802", "error"), ("EK801", "error")]
    assert never.diagnostics[0].severity is Severity.ERROR


def test_no_reference_but_empty_gets_full_marks() -> None:
    """xlam_fc's rows without `expected_answers`: any reply without a tool call scores 1.0."""
    a = _assess(_obs({n: _same(1.0) for n in FREE}))
    assert _codes(a) == [("EK808", "warning"), ("EK801", "error")]
    assert "`empty`" in a.diagnostics[1].message
