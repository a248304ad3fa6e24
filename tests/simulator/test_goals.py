"""The goals ours is held to, judged from sweep.json and summary.json.

Covered: each sweep goal (issue 46's) is MET at its limit and MISSED just past it; the highest
undominated share allows ties; worse than requests allows obeying a deschedule rule and names
every cause; perfect information is shown beside ours and never judged in its place; a figure
that is missing is not judged (never counted as met); the named-scenario goals need intervals
that do not overlap, not merely a lower mean.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from simulator.goals import named_goals, report, sweep_goals


def _row(undominated: float = 0.95) -> dict[str, Any]:
    return {
        "undominated_share": undominated,
        "worse_than_requests": {"scenarios": 0},
        "max_evictions_per_pod_hour": {"p95": 2, "max": 3},
        "share_of_gain_hindsight": {"work_lost": {"median": 0.5, "p10": 0.1, "scenarios": 120}},
    }


def _verdict() -> dict[str, Any]:
    return {
        "scenarios": 200,
        "contenders": {"ours": _row(), "requests": _row(0.9), "psi-profile": _row(0.95)},
    }


def test_worse_than_requests_allows_obeying_a_deschedule_rule_and_says_each_cause() -> None:
    verdict = copy.deepcopy(_verdict())
    verdict["contenders"]["ours"]["worse_than_requests"] = {
        "scenarios": 5,
        "by_cause": {"deschedule_rule": 3, "restarts_for_stall": 0, "other": 2},
    }
    goal = sweep_goals(verdict)[2]
    assert goal.met is False
    assert goal.line().startswith(
        "  MISSED     scenarios worse than requests beyond the interval, "
        "but for obeying a deschedule rule: 2 (goal <= 0)"
    )
    assert goal.line().endswith(
        "of ours': 3 obey a deschedule rule requests ignores (allowed), "
        "2 other (worse placements, moves that bought nothing)"
    )
    verdict["contenders"]["ours"]["worse_than_requests"]["by_cause"]["other"] = 0
    verdict["contenders"]["ours"]["worse_than_requests"]["scenarios"] = 3
    assert sweep_goals(verdict)[2].met is True


def test_every_sweep_goal_is_met_at_its_limit() -> None:
    goals = sweep_goals(_verdict())
    assert [g.met for g in goals] == [True] * 6
    assert report("t", goals).startswith("t: 6 of 6 met")
    assert goals[5].line().endswith("50% over 120 scenarios with a gain (goal >= 50%)")


@pytest.mark.parametrize(
    ("path", "value", "goal"),
    [
        pytest.param(("undominated_share",), 0.94, 0, id="undominated"),
        pytest.param(("worse_than_requests", "scenarios"), 1, 2, id="worse-than-requests"),
        pytest.param(("max_evictions_per_pod_hour", "p95"), 2.5, 3, id="churn-p95"),
        pytest.param(("max_evictions_per_pod_hour", "max"), 4, 4, id="churn-max"),
        pytest.param(("share_of_gain_hindsight", "work_lost", "median"), 0.49, 5, id="gain"),
    ],
)
def test_a_sweep_goal_is_missed_just_past_its_limit(
    path: tuple[str, ...], value: float, goal: int
) -> None:
    verdict = copy.deepcopy(_verdict())
    row = verdict["contenders"]["ours"]
    for key in path[:-1]:
        row = row[key]
    row[path[-1]] = value
    if path == ("undominated_share",):  # still the highest: only the share's own goal misses
        verdict["contenders"]["psi-profile"]["undominated_share"] = 0.9
    goals = sweep_goals(verdict)
    assert goals[goal].met is False
    assert "MISSED" in goals[goal].line()
    assert sum(g.met is False for g in goals) == 1


def test_another_contender_undominated_more_often_misses_the_highest_share() -> None:
    verdict = copy.deepcopy(_verdict())
    verdict["contenders"]["psi-profile"]["undominated_share"] = 0.97
    goal = sweep_goals(verdict)[1]
    assert goal.met is False
    assert goal.line().endswith("95% (the next: psi-profile 97%)")
    verdict["contenders"]["psi-profile"]["undominated_share"] = 0.95
    assert sweep_goals(verdict)[1].met is True  # a tie is not beaten


def test_each_sweep_goal_shows_what_perfect_information_reaches_and_is_judged_on_ours() -> None:
    verdict = copy.deepcopy(_verdict())
    clairvoyant = _row(0.82)
    clairvoyant["share_of_gain_hindsight"]["work_lost"]["median"] = 0.7
    verdict["references"] = {"clairvoyant": clairvoyant}
    verdict["contenders"]["ours"]["share_of_gain_hindsight"]["work_lost"]["median"] = 0.2
    goals = sweep_goals(verdict)
    # Judged on ours alone: the clairvoyant meeting a goal does not make ours meet it, and
    # missing one does not make ours miss it.
    assert [g.met for g in goals] == [True, True, True, True, True, False]
    assert (
        goals[0]
        .line()
        .endswith("95% (goal >= 95%); with perfect information 82%, which misses it too")
    )
    assert (
        goals[5]
        .line()
        .endswith(
            "20% over 120 scenarios with a gain (goal >= 50%); "
            "with perfect information 70% over 120 scenarios with a gain"
        )
    )


def test_a_missing_figure_is_not_judged_and_not_counted() -> None:
    goals = sweep_goals({"scenarios": 3, "contenders": {"requests": {}}})
    assert all(g.met is None for g in goals)
    assert report("t", goals).startswith("t: 0 of 0 met")


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
    assert [g.met for g in clear[:7]] == [True] * 7
    assert "psi-profile-60s" in clear[3].name  # the shipped hourly cadence and 60 s, both
    overlapping = named_goals(_summary([1.0, 2.6], [2.5, 3.0]))
    assert [g.met for g in overlapping[:6]] == [False] * 6


def test_named_goals_not_run_are_not_judged() -> None:
    assert all(g.met is None for g in named_goals({"scenarios": {}}))


def test_scale_out_goals_allow_intervals_on_work_lost_and_none_of_herd_or_violations() -> None:
    def judged(ours_lost: list[float], herd: float, violating: float) -> list[bool | None]:
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
        return [g.met for g in named_goals({"scenarios": {"scale-out": scale_out}})[-3:]]

    assert judged([540.0, 780.0], 1.4, 0.0) == [True, True, True]  # overlapping: not worse
    assert judged([570.0, 780.0], 2.0, 0.2) == [False, False, False]


def test_the_scale_out_goals_show_the_clairvoyants_figures() -> None:
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
    assert herd.met is False
    assert herd.line().endswith(
        "2.00 (by count 3.70) (goal <= 1.5); "
        "with perfect information 1.90 (by count 3.60), which misses it too"
    )
    assert violating.met is False
    assert violating.line().endswith("1.0 (goal <= 0); with perfect information 0.0")
