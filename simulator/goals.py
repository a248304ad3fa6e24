"""The goals `ours` is held to, checked on the evidence and printed MET or MISSED.

They come from the project's issues, and they are checked on results, never used to tune:
- on a sweep of drawn scenarios (`sweep.json`): best or tied with the best on work lost and on
  stall in at least 90% of scenarios; work lost at most 0.6x requests' at p90 and never worse
  beyond the interval; at most 2 evictions of one pod per hour at p95 and 3 anywhere; no
  violating placement in at least 95% of scenarios;
- on the named scenarios (`summary.json`, several seeds): in psi-taint-release, ours beats
  psi-profile on work lost, stall and spread (intervals that do not overlap); in psi-skewed,
  ours' spread p95 is at most half of requests'; in scale-out (issue 25), ours' work lost is at
  most requests-lnu's (intervals allowed: not worse beyond them), its herd ratio at most 1.5
  and it makes no violating placement.

A goal whose figures are missing (a contender or scenario not run) is not judged, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

OURS = "ours"


@dataclass(frozen=True)
class Goal:
    name: str
    #: True (met), False (missed), None (not judged: its figures are missing).
    met: bool | None
    shown: str

    def line(self) -> str:
        verdict = {True: "MET", False: "MISSED", None: "NOT JUDGED"}[self.met]
        return f"  {verdict:10} {self.name}: {self.shown}"


def _get(document: Mapping[str, Any], *path: str) -> Any:
    found: Any = document
    for part in path:
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def _at_most(name: str, value: Any, limit: float, fmt: str = "{:.2f}") -> Goal:
    if value is None:
        return Goal(name, None, "no figure")
    return Goal(name, value <= limit, f"{fmt.format(value)} (goal <= {limit:g})")


def _at_least(name: str, value: Any, limit: float) -> Goal:
    if value is None:
        return Goal(name, None, "no figure")
    return Goal(name, value >= limit, f"{value:.0%} (goal >= {limit:.0%})")


def sweep_goals(verdict: Mapping[str, Any]) -> list[Goal]:
    ours = _get(verdict, "contenders", OURS) or {}
    return [
        _at_least("best or tied on work lost", _get(ours, "best_or_tied_share", "work_lost"), 0.9),
        _at_least("best or tied on stall", _get(ours, "best_or_tied_share", "stall"), 0.9),
        _at_most(
            "work lost vs requests, p90", _get(ours, "work_lost_vs_requests", "p90"), 0.6, "{:.2f}x"
        ),
        _at_most(
            "scenarios worse than requests beyond the interval",
            _get(ours, "worse_than_requests", "scenarios"),
            0,
            "{:.0f}",
        ),
        _at_most(
            "evictions of one pod per hour, p95",
            _get(ours, "max_evictions_per_pod_hour", "p95"),
            2,
            "{:.1f}",
        ),
        _at_most(
            "evictions of one pod per hour, anywhere",
            _get(ours, "max_evictions_per_pod_hour", "max"),
            3,
            "{:.0f}",
        ),
        _at_least(
            "scenarios without a violating placement",
            _get(ours, "violating_placements", "none_share"),
            0.95,
        ),
    ]


def _below(summary: Mapping[str, Any], scenario: str, figure: Sequence[str], other: str) -> Goal:
    name = f"{scenario}: ours below {other} on {'.'.join(figure)}"
    ours = _get(summary, "scenarios", scenario, "ci95", OURS, *figure)
    theirs = _get(summary, "scenarios", scenario, "ci95", other, *figure)
    if ours is None or theirs is None:
        return Goal(name, None, "not run")
    shown = f"ours [{ours[0]:.4g}, {ours[1]:.4g}], {other} [{theirs[0]:.4g}, {theirs[1]:.4g}]"
    return Goal(name, ours[1] < theirs[0], shown)


def named_goals(summary: Mapping[str, Any]) -> list[Goal]:
    goals = [
        _below(summary, "psi-taint-release", figure, "psi-profile")
        for figure in (("work_lost", "core_seconds"), ("stall",), ("pressure_spread", "p95"))
    ]
    ours = _get(summary, "scenarios", "psi-skewed", "contenders", OURS, "pressure_spread", "p95")
    requests = _get(
        summary, "scenarios", "psi-skewed", "contenders", "requests", "pressure_spread", "p95"
    )
    name = "psi-skewed: ours' spread p95 against requests'"
    if ours is None or not requests:
        goals.append(Goal(name, None, "not run"))
    else:
        goals.append(_at_most(name, ours / requests, 0.5, "{:.2f}x"))
    return [*goals, *_scale_out_goals(summary)]


def _scale_out_goals(summary: Mapping[str, Any]) -> list[Goal]:
    scenario = "scale-out"
    ours = _get(summary, "scenarios", scenario, "ci95", OURS, "work_lost", "core_seconds")
    lnu = _get(summary, "scenarios", scenario, "ci95", "requests-lnu", "work_lost", "core_seconds")
    name = f"{scenario}: ours' work lost at most requests-lnu's"
    if ours is None or lnu is None:
        lost = Goal(name, None, "not run")
    else:
        shown = f"ours [{ours[0]:.4g}, {ours[1]:.4g}], requests-lnu [{lnu[0]:.4g}, {lnu[1]:.4g}]"
        lost = Goal(name, ours[0] <= lnu[1], shown)
    figures = ("scenarios", scenario, "contenders", OURS)
    return [
        lost,
        _at_most(f"{scenario}: ours' herd ratio", _get(summary, *figures, "herd_ratio"), 1.5),
        _at_most(
            f"{scenario}: ours' violating placements",
            _get(summary, *figures, "violating_placements"),
            0,
            "{:.1f}",
        ),
    ]


def report(title: str, goals: Sequence[Goal]) -> str:
    judged = [g for g in goals if g.met is not None]
    met = sum(1 for g in judged if g.met)
    return "\n".join([f"{title}: {met} of {len(judged)} met", *(g.line() for g in goals)])
