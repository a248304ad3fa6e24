"""The goals ours is held to, judged from sweep.json and summary.json.

Covered: each sweep goal is MET where its interval clears it (at its limit), MISSED where the
interval lies wholly on the wrong side, UNDECIDED where it straddles the goal, and counts are
MET or MISSED; worse than requests allows only a deschedule rule that accounts for the loss and
names every cause; ours fed true values (the clairvoyant) is shown beside ours as what it is,
never as a bound and never judged in its place; a MISSED ratio shows the fluid limit's ratio as
its bound and the hindsight's beside it; a ratio goal not met says in how many scenarios the
limit's joint bound shows no scheduler meets both; a sweep.json without intervals is judged on
its counts alone; a missing figure is NOT JUDGED and counted apart; an interval over one
scenario decides nothing; the named-scenario goals need intervals that do not overlap, and only
the scenarios run are given; a figure that would print as its goal's line shows its side; an
UNDECIDED goal says about how many scenarios would decide it, or that none would; a MISSED
count or share says whether another source meets it (requests left out of "worse than
requests"), naming a source's undominated share by its source, and only where it is MISSED.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from tas_simulator.goals import Verdict, named_goals, report, sweep_goals
from tas_simulator.sweep import both_goals_within_reach

MET, MISSED, UNDECIDED, NOT_JUDGED = (
    Verdict.MET,
    Verdict.MISSED,
    Verdict.UNDECIDED,
    Verdict.NOT_JUDGED,
)


def _estimate(estimate: float, low: float, high: float, **more: Any) -> dict[str, Any]:
    return {"estimate": estimate, "low": low, "high": high, "scenarios": 30, **more}


def _row() -> dict[str, Any]:
    """Ours with every goal met exactly at its limit."""
    return {
        "worse_than_requests": {"scenarios": 0},
        "max_evictions_per_pod_hour": {"p95": 2, "max": 3},
        "population": {
            "work_lost_vs_requests": _estimate(0.85, 0.7, 0.99),
            "stall_vs_requests": _estimate(0.9, 0.8, 1.0),
            "share_of_gain_hindsight": _estimate(0.5, 0.4, 0.6),
            "share_of_gain_limit": _estimate(0.3, 0.2, 0.4),
        },
        "source": {
            "name": "ours",
            "undominated": _estimate(0.98, 0.95, 1.0),
            "lead": {"estimate": 0.02, "low": 0.0, "high": 0.05, "next": "psi-profile"},
        },
    }


def _verdict() -> dict[str, Any]:
    return {"scenarios": 30, "contenders": {"ours": _row(), "requests": {}}}


def _set(verdict: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(verdict)
    place = changed["contenders"]["ours"]
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = value
    return changed


def test_every_sweep_goal_is_met_where_its_interval_clears_it_at_its_limit() -> None:
    goals = sweep_goals(_verdict())
    assert [g.met for g in goals] == [MET] * 8
    assert report("t", goals).startswith("t: 8 MET, 0 MISSED, 0 UNDECIDED\n")
    assert goals[0].line() == (
        "  MET        work lost against requests', geometric mean of the ratios over scenarios: "
        "0.85x (0.70x to 0.99x) over 30 scenarios (goal <= 0.85x, its interval below 1)"
    )
    assert (
        goals[5]
        .line()
        .endswith(
            "50% (40% to 60%) over 30 scenarios (goal >= 50%, its interval from 40%); "
            "against the fluid limit 30% (20% to 40%) over 30 scenarios"
        )
    )
    assert (
        goals[7]
        .line()
        .endswith(
            "+2 points (+0 to +5) against the next, psi-profile "
            "(goal: at or above 0, a tie allowed)"
        )
    )


_LOST = ("population", "work_lost_vs_requests")
_STALL = ("population", "stall_vs_requests")
_GAIN = ("population", "share_of_gain_hindsight")
_UNDOMINATED = ("source", "undominated")
_LEAD = ("source", "lead")


@pytest.mark.parametrize(
    ("path", "value", "goal", "verdict"),
    [
        pytest.param(_LOST, _estimate(0.9, 0.86, 0.95), 0, MISSED, id="lost-wholly-above-0.85"),
        pytest.param(_LOST, _estimate(0.8, 0.7, 1.0), 0, UNDECIDED, id="lost-upper-end-at-1"),
        pytest.param(_LOST, _estimate(0.86, 0.7, 0.95), 0, UNDECIDED, id="lost-above-0.85"),
        pytest.param(_STALL, _estimate(1.1, 1.01, 1.2), 1, MISSED, id="stall-wholly-above-1"),
        pytest.param(_STALL, _estimate(0.95, 0.9, 1.01), 1, UNDECIDED, id="stall-straddles-1"),
        pytest.param(("worse_than_requests", "scenarios"), 1, 2, MISSED, id="one-worse"),
        pytest.param(("max_evictions_per_pod_hour", "p95"), 2.5, 3, MISSED, id="churn-p95"),
        pytest.param(("max_evictions_per_pod_hour", "max"), 4, 4, MISSED, id="churn-max"),
        pytest.param(_GAIN, _estimate(0.4, 0.3, 0.49), 5, MISSED, id="gain-wholly-below-50"),
        pytest.param(_GAIN, _estimate(0.55, 0.39, 0.7), 5, UNDECIDED, id="gain-low-end-short"),
        pytest.param(_GAIN, _estimate(0.45, 0.4, 0.6), 5, UNDECIDED, id="gain-median-short"),
        pytest.param(_UNDOMINATED, _estimate(0.9, 0.85, 0.94), 6, MISSED, id="undominated-below"),
        pytest.param(_UNDOMINATED, _estimate(0.96, 0.94, 1.0), 6, UNDECIDED, id="undom-straddles"),
        pytest.param(
            _LEAD, {"estimate": -0.05, "low": -0.1, "high": -0.01, "next": "x"}, 7, MISSED,
            id="another-source-clearly-ahead",
        ),
        pytest.param(
            _LEAD, {"estimate": 0.01, "low": -0.02, "high": 0.04, "next": "x"}, 7, UNDECIDED,
            id="lead-straddles-0",
        ),
    ],
)  # fmt: skip
def test_a_sweep_goal_is_missed_wholly_past_its_limit_and_undecided_across_it(
    path: tuple[str, ...], value: Any, goal: int, verdict: Verdict
) -> None:
    goals = sweep_goals(_set(_verdict(), path, value))
    assert goals[goal].met is verdict
    assert goals[goal].line().startswith(f"  {verdict}")
    assert [g.met for i, g in enumerate(goals) if i != goal] == [MET] * 7


def test_worse_than_requests_allows_only_a_rule_that_covers_the_loss_and_names_each_cause() -> None:
    verdict = _set(
        _verdict(),
        ("worse_than_requests",),
        {"scenarios": 5, "by_cause": {"deschedule_rule": 3, "restarts_for_stall": 0, "other": 2}},
    )
    goal = sweep_goals(verdict)[2]
    assert goal.met is MISSED
    assert goal.line().startswith(
        "  MISSED     scenarios clearly worse than requests (paired), but for a deschedule rule "
        "that accounts for the loss: 2 (goal <= 0)"
    )
    assert goal.line().endswith(
        "of ours': 3 a deschedule rule's evictions displaced the extra loss (allowed), "
        "2 other (worse placements, moves that bought nothing)"
    )
    verdict["contenders"]["ours"]["worse_than_requests"] = {
        "scenarios": 3,
        "by_cause": {"deschedule_rule": 3},
    }
    assert sweep_goals(verdict)[2].met is MET


def test_ours_fed_true_values_is_shown_as_what_it_is_and_judged_nowhere() -> None:
    verdict = _verdict()
    clairvoyant = _row()
    clairvoyant["population"]["share_of_gain_hindsight"] = _estimate(0.7, 0.6, 0.8)
    verdict["references"] = {"clairvoyant": clairvoyant}
    verdict = _set(verdict, _GAIN, _estimate(0.2, 0.1, 0.3))
    goals = sweep_goals(verdict)
    assert [g.met for g in goals] == [MET] * 5 + [MISSED] + [MET] * 2
    assert goals[5].line().endswith("; ours fed true values: 70% (60% to 80%) over 30 scenarios")
    assert not any("misses it too" in g.line() or "bound" in g.line() for g in goals)


def test_a_missed_ratio_shows_the_fluid_limit_as_its_bound_and_the_hindsight_beside() -> None:
    verdict = _set(_verdict(), _LOST, _estimate(0.95, 0.9, 1.0))
    verdict["references"] = {
        "limit": {"population": {"work_lost_vs_requests": _estimate(0.88, 0.86, 0.9)}},
        "hindsight": {"population": {"work_lost_vs_requests": _estimate(0.92, 0.9, 0.95)}},
    }
    lost = sweep_goals(verdict)[0]
    assert lost.met is MISSED
    assert lost.line().endswith(
        "; bound: the fluid limit 0.88x (0.86x to 0.90x) over 30 scenarios; "
        "the hindsight placement (no moves) 0.92x (0.90x to 0.95x) over 30 scenarios"
    )
    assert "bound" not in sweep_goals(_verdict())[0].line()  # only where it is MISSED


def test_a_ratio_goal_not_met_says_where_the_limit_shows_no_scheduler_meets_both() -> None:
    # The fluid limit bounds stall + work lost together: where even a scheduler at both goals'
    # edges would be below it, no scheduler meets both; said under either goal not met.
    verdict = _set(_verdict(), _STALL, _estimate(1.02, 0.99, 1.05))
    verdict["references"] = {
        "limit": {"both_goals_out_of_reach": {"scenarios": ["a", "b"], "of": 30}},
    }
    lost, stall = sweep_goals(verdict)[:2]
    assert stall.met is UNDECIDED
    assert stall.line().endswith(
        "; the fluid limit's joint bound: in 2 of 30 scenarios no scheduler loses at most 0.85x "
        "requests' work and stalls at most 1x requests'"
    )
    assert lost.met is MET
    assert "joint bound" not in lost.line()


@pytest.mark.parametrize(
    ("requests", "limit", "within"),
    [
        pytest.param((100.0, 1000.0), (10.0, 1000.0), True, id="room for both"),
        pytest.param(
            (100.0, 1000.0), (50.0, 1040.0), False, id="only by losing more or stalling more"
        ),
        pytest.param((100.0, 1000.0), (90.0, 500.0), False, id="the limit loses more than 0.85x"),
        # The ratios add 1 to each side: where requests lost nothing, none is below 1x.
        pytest.param((0.0, 1000.0), (0.0, 1000.0), False, id="requests lost nothing"),
    ],
)
def test_both_goals_are_within_reach_only_where_the_limits_sum_allows(
    requests: tuple[float, float], limit: tuple[float, float], within: bool
) -> None:
    assert both_goals_within_reach(*requests, *limit) is within


def test_a_sweep_json_without_intervals_is_judged_on_its_counts_alone() -> None:
    old = {
        "undominated_share": 0.99,
        "worse_than_requests": {"scenarios": 6, "by_cause": {"deschedule_rule": 0}},
        "max_evictions_per_pod_hour": {"p95": 2, "max": 3},
        "share_of_gain_hindsight": {"work_lost": {"median": 0.36, "scenarios": 120}},
    }
    goals = sweep_goals({"scenarios": 200, "contenders": {"ours": old}})
    assert [g.met for g in goals] == [
        NOT_JUDGED, NOT_JUDGED, MISSED, MET, MET, UNDECIDED, UNDECIDED, NOT_JUDGED,
    ]  # fmt: skip
    assert "no interval" in goals[5].line()
    assert report("t", goals).startswith("t: 2 MET, 1 MISSED, 2 UNDECIDED (3 NOT JUDGED")


def test_a_missing_figure_is_not_judged_and_counted_apart() -> None:
    goals = sweep_goals({"scenarios": 3, "contenders": {"requests": {}}})
    assert all(g.met is NOT_JUDGED for g in goals)
    assert report("t", goals).startswith("t: 0 MET, 0 MISSED, 0 UNDECIDED (8 NOT JUDGED")


def _summary(ours: list[float], theirs: list[float]) -> dict[str, Any]:
    def figures(interval: list[float]) -> dict[str, Any]:
        return {
            "work_lost": {"core_seconds": interval},
            "stall": interval,
            "pressure_spread": {"p95": interval},
        }

    return {
        "scenarios": {
            "psi-taint-release": {
                "ci95": {
                    "ours": figures(ours),
                    "psi-profile": figures(theirs),
                    "psi-profile-60s": figures(theirs),
                }
            },
            "psi-skewed": {
                "contenders": {
                    "ours": {"pressure_spread": {"p95": 0.2}},
                    "requests": {"pressure_spread": {"p95": 0.4}},
                }
            },
        }
    }


def test_beating_a_contender_needs_intervals_that_do_not_overlap() -> None:
    clear = named_goals(_summary([1.0, 2.0], [2.5, 3.0]))
    assert [g.met for g in clear] == [MET] * 7
    assert "psi-profile-60s" in clear[3].name  # the shipped hourly cadence and 60 s, both
    overlapping = named_goals(_summary([1.0, 2.6], [2.5, 3.0]))
    assert [g.met for g in overlapping[:6]] == [UNDECIDED] * 6
    above = named_goals(_summary([3.1, 4.0], [2.5, 3.0]))
    assert [g.met for g in above[:6]] == [MISSED] * 6


def test_only_the_goals_of_the_named_scenarios_run_are_given() -> None:
    assert named_goals({"scenarios": {}}) == []
    skewed = _summary([1.0, 2.0], [2.5, 3.0])
    del skewed["scenarios"]["psi-taint-release"]
    goals = named_goals(skewed)
    assert [g.name for g in goals] == ["psi-skewed: ours' spread p95 against requests'"]
    assert report("t", goals).startswith("t: 1 MET, 0 MISSED, 0 UNDECIDED\n")


def test_scale_out_goals_allow_intervals_on_work_lost_and_none_of_herd_or_violations() -> None:
    def judged(ours_lost: list[float], herd: float, violating: float) -> list[Verdict]:
        scale_out = {
            "ci95": {
                "ours": {"work_lost": {"core_seconds": ours_lost}},
                "requests-lnu": {"work_lost": {"core_seconds": [500.0, 560.0]}},
            },
            "contenders": {
                "ours": {
                    "herd_ratio": 3.7,
                    "herd_ratio_by_load": herd,
                    "violating_placements": violating,
                }
            },
        }
        return [g.met for g in named_goals({"scenarios": {"scale-out": scale_out}})]

    assert judged([540.0, 780.0], 1.4, 0.0) == [MET, MET, MET]  # overlapping: not worse
    assert judged([570.0, 780.0], 2.0, 0.2) == [MISSED, MISSED, MISSED]


def test_the_scale_out_goals_show_ours_fed_true_values() -> None:
    scale_out = {
        "contenders": {
            "ours": {"herd_ratio": 3.7, "herd_ratio_by_load": 2.0, "violating_placements": 1.0}
        },
        "references": {
            "clairvoyant": {
                "herd_ratio": 3.6,
                "herd_ratio_by_load": 1.9,
                "violating_placements": 0.0,
            }
        },
    }
    herd, violating = named_goals({"scenarios": {"scale-out": scale_out}})[-2:]
    assert herd.met is MISSED
    assert herd.line().endswith(
        "2.00 (by count 3.70) (goal <= 1.5); ours fed true values: 1.90 (by count 3.60)"
    )
    assert violating.met is MISSED
    assert violating.line().endswith("1.0 (goal <= 0); ours fed true values: 0.0")


def test_an_interval_over_one_scenario_decides_nothing() -> None:
    one = _set(_verdict(), _GAIN, {**_estimate(0.2, 0.2, 0.2), "scenarios": 1})
    assert sweep_goals(one)[5].met is UNDECIDED
    two = _set(_verdict(), _GAIN, {**_estimate(0.2, 0.2, 0.2), "scenarios": 2})
    assert sweep_goals(two)[5].met is MISSED


@pytest.mark.parametrize(
    ("difference", "verdict"),
    [
        pytest.param([-300.0, -20.0], MET, id="wholly-below-0"),
        pytest.param([-30.0, 20.0], UNDECIDED, id="straddles-0"),
        pytest.param([5.0, 40.0], MISSED, id="wholly-above-0"),
    ],
)
def test_beating_a_contender_on_a_named_scenario_is_paired_by_seed_where_summary_has_it(
    difference: list[float], verdict: Verdict
) -> None:
    """Intervals that overlap (the unpaired test: UNDECIDED) decide nothing once the per-seed
    differences are there: those are what is judged."""
    summary = _summary([1.0, 2.6], [2.5, 3.0])
    entry = summary["scenarios"]["psi-taint-release"]
    entry["ours_minus"] = {
        other: dict.fromkeys(("work_lost.core_seconds", "stall"), difference)
        for other in ("psi-profile", "psi-profile-60s")
    }
    goals = named_goals(summary)
    lost = goals[0]
    assert lost.met is verdict
    assert lost.shown == (
        f"ours - psi-profile, paired by seed: [{difference[0]:.4g}, {difference[1]:.4g}]"
    )
    assert goals[2].met is UNDECIDED  # the spread has no paired figure here: unpaired


@pytest.mark.parametrize(
    ("path", "value", "goal", "shown"),
    [
        pytest.param(
            _UNDOMINATED, _estimate(0.91875, 0.8875, 0.946875), 6,
            "92% (89% to 94.7%) over 30 scenarios", id="undominated-end-just-under-95",
        ),
        pytest.param(
            _STALL, _estimate(0.9971, 0.991, 1.0032), 1,
            "0.997x (0.99x to 1.003x) over 30 scenarios", id="stall-end-just-over-1",
        ),
        pytest.param(
            _GAIN, _estimate(0.497, 0.3, 0.6), 5,
            "49.7% (30% to 60%) over 30 scenarios", id="gain-median-just-under-50",
        ),
        pytest.param(
            _LOST, _estimate(0.8512, 0.7, 0.95), 0,
            "0.851x (0.70x to 0.95x) over 30 scenarios", id="lost-just-over-0.85",
        ),
        # A lead of half a point under 0 is not "-0 points": it is UNDECIDED, not a tie.
        pytest.param(
            _LEAD, {"estimate": -0.005, "low": -0.05, "high": 0.04, "next": "psi-profile"}, 7,
            "-0.5 points (-5 to +4) against the next, psi-profile", id="lead-just-under-0",
        ),
    ],
)  # fmt: skip
def test_a_figure_that_would_print_as_its_goals_line_shows_which_side_it_is_on(
    path: tuple[str, ...], value: Any, goal: int, shown: str
) -> None:
    """92% (89% to 95%) beside "goal >= 95%" and MISSED reads as a contradiction: an end that
    rounds onto the line gets the digits that show it is short of it."""
    goals = sweep_goals(_set(_verdict(), path, value))
    assert goals[goal].shown == shown
    assert goals[goal].met is not MET


def test_an_undominated_share_short_of_every_scenario_does_not_print_as_100() -> None:
    met = sweep_goals(_set(_verdict(), _UNDOMINATED, _estimate(0.996875, 0.990625, 1.0)))[6]
    assert (met.met, met.shown) == (MET, "99.7% (99% to 100%) over 30 scenarios")


def test_a_figure_on_its_goals_line_prints_as_usual() -> None:
    goals = sweep_goals(_verdict())
    assert goals[6].shown == "98% (95% to 100%) over 30 scenarios"
    assert goals[1].shown == "0.90x (0.80x to 1.00x) over 30 scenarios"


@pytest.mark.parametrize(
    ("path", "value", "goal", "scenarios"),
    [
        # 94% (86% to 100%) over 50: the upper end must come under 95%, six times nearer.
        pytest.param(
            _UNDOMINATED, {**_estimate(0.94, 0.86, 1.0), "scenarios": 50}, 6, 1_800,
            id="undominated-under-its-goal",
        ),
        # 36% (20% to 61%) over 47: the upper end must come under 50%.
        pytest.param(
            _GAIN, {**_estimate(0.36, 0.2, 0.61), "scenarios": 47}, 5, 150, id="gain-under-50",
        ),
        # 52% (23% to 62%) over 47: the lower end must reach 40%.
        pytest.param(
            _GAIN, {**_estimate(0.52, 0.23, 0.62), "scenarios": 47}, 5, 275, id="gain-over-50",
        ),
        # Ratios narrow on the log scale: 0.9x (0.8x to 1x) over 30 heads for MISSED, its
        # lower end over 0.85x.
        pytest.param(
            _LOST, _estimate(0.9, 0.8, 1.0), 0,
            math.ceil(30 * (math.log(0.9 / 0.8) / math.log(0.9 / 0.85)) ** 2),
            id="lost-over-0.85",
        ),
        pytest.param(
            _STALL, _estimate(0.995, 0.988, 1.0025), 1,
            math.ceil(30 * (math.log(1.0025 / 0.995) / math.log(1 / 0.995)) ** 2),
            id="stall-just-under-1",
        ),
        # The lead has no count of its own: it is judged over the undominated share's.
        pytest.param(
            _LEAD, {"estimate": -0.02, "low": -0.1, "high": 0.08, "next": "x"}, 7, 30 * 25,
            id="lead-under-0",
        ),
    ],
)  # fmt: skip
def test_an_undecided_goal_says_about_how_many_scenarios_would_decide_it(
    path: tuple[str, ...], value: Any, goal: int, scenarios: int
) -> None:
    """What `make compare DEFAULT_COUNT=N` needs to be told: the size that would decide the
    goal if its estimate held and its interval narrowed as 1/sqrt(n)."""
    judged = sweep_goals(_set(_verdict(), path, value))[goal]
    assert judged.met is UNDECIDED
    assert f"; about {scenarios:,} scenarios would decide it, if the estimate holds" in (
        judged.notes
    )


def test_an_undecided_goal_on_its_line_says_no_size_decides_it() -> None:
    judged = sweep_goals(_set(_verdict(), _UNDOMINATED, _estimate(0.95, 0.9, 1.0)))[6]
    assert judged.met is UNDECIDED
    assert judged.notes.endswith("; no size of draw decides it while its estimate sits on the line")


def test_a_decided_goal_says_nothing_of_sizes() -> None:
    for verdict in (_verdict(), _set(_verdict(), _UNDOMINATED, _estimate(0.9, 0.85, 0.94))):
        assert not any("would decide it" in g.notes for g in sweep_goals(verdict))


def _other(source: str, *, worse: int, gain: float, undominated: float) -> dict[str, Any]:
    """Another contender's row: its worse count, gain share and its source's undominated
    share (every row of a source carries the source's)."""
    row = _row()
    row["worse_than_requests"] = {"scenarios": worse}
    row["population"]["share_of_gain_hindsight"] = _estimate(gain, gain - 0.1, gain + 0.05)
    row["source"] = {
        "name": source,
        "undominated": _estimate(undominated, undominated - 0.04, min(1.0, undominated + 0.02)),
    }
    return row


def _with_others(verdict: dict[str, Any]) -> dict[str, Any]:
    verdict["contenders"].update(
        {
            # Requests loses nothing against itself: the yardstick, left out of "worse".
            "requests": _other("requests", worse=0, gain=0.0, undominated=0.8),
            "psi-profile-30s": _other("psi-profile", worse=9, gain=0.1, undominated=0.997),
            "psi-profile-60s": _other("psi-profile", worse=4, gain=0.2, undominated=0.997),
            "volcano-loadaware": _other("volcano", worse=6, gain=0.3, undominated=0.9),
        }
    )
    return verdict


def test_a_missed_share_says_whether_another_source_meets_it_with_its_figure() -> None:
    """Where no fluid-limit bound applies, the contenders are the evidence: a source meeting
    the goal puts it within a scheduler's reach; none meeting it says only that."""
    verdict = _with_others(_set(_verdict(), _UNDOMINATED, _estimate(0.92, 0.89, 0.947)))
    verdict = _set(verdict, _GAIN, _estimate(0.2, 0.1, 0.36))
    goals = sweep_goals(verdict)
    gain, undominated = goals[5], goals[6]
    assert (gain.met, undominated.met) == (MISSED, MISSED)
    # The source is named once, not by its rows, and 0.997 does not print as 100%.
    assert undominated.line().endswith(
        "; within a scheduler's reach: psi-profile meets it, 99.7% (96% to 100%) over 30 scenarios"
    )
    assert gain.line().endswith(
        "; no other source meets it either: the best, volcano-loadaware, 30% (20% to 35%) over "
        "30 scenarios"
    )


def test_worse_than_requests_leaves_requests_out_and_names_the_fewest_row() -> None:
    verdict = _with_others(_set(_verdict(), ("worse_than_requests",), {"scenarios": 5}))
    worse = sweep_goals(verdict)[2]
    assert worse.met is MISSED
    assert worse.line().endswith("; no other source meets it either: the best, psi-profile-60s, 4")
    verdict["contenders"]["requests-lnu"] = _other("requests-lnu", worse=0, gain=0, undominated=0.8)
    assert (
        sweep_goals(verdict)[2]
        .line()
        .endswith("; within a scheduler's reach: requests-lnu meets it, 0")
    )


def test_a_goal_met_or_undecided_says_nothing_of_the_other_sources() -> None:
    undecided = _set(_verdict(), _UNDOMINATED, _estimate(0.94, 0.86, 1.0))
    for verdict in (_with_others(_verdict()), _with_others(undecided)):
        assert not any("reach:" in g.notes or "either" in g.notes for g in sweep_goals(verdict))
