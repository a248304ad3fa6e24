"""The goals `ours` is held to, judged on the evidence: MET, MISSED or UNDECIDED.

They are checked on results, never used to tune. A goal on a figure with an interval is MET
when the interval clears it, MISSED when the interval lies wholly on the wrong side, and
UNDECIDED otherwise: the runs cannot tell, and more seeds or scenarios might (the goal says
about how many). A figure that would print as its goal's line without being on it (0.947 as
"95%") is printed with the digits that show which side it is on. A goal on a count (evictions
of one pod, scenarios worse than requests) is MET or MISSED. A goal whose figures are missing
is NOT JUDGED.

On each sweep of drawn scenarios (`sweep.json`, `tas_simulator.sweep`), population statements with
a 95% bootstrap interval over the scenarios (issue 54):
- work lost: ours' geometric-mean ratio to requests' at most 0.85, the interval's upper end
  below 1 (MISSED when its lower end is above 0.85);
- stall: the same ratio's interval at most 1.00 at its upper end (MISSED above 1 at its lower);
- no scenario where ours loses clearly more work than requests (paired by seed), but where what
  its evictions for a deschedule rule displaced covers the extra loss;
- the median share of the work-lost gain against the hindsight placement at least 50% with
  the interval's lower end at least 40% (MISSED when its upper end is below 50%); the share
  against the fluid limit is shown beside it;
- at most 2 evictions of one pod per hour at p95 over the runs, and 3 anywhere;
- undominated in at least 95% of scenarios against the best documented setting of every
  source (no row of another source better on work lost or stall and no worse on the other,
  paired), and the highest such share: ours' share less the best other source's, an interval
  at or above 0 (a tie allowed).

A sweep written before these figures existed (no `population`) is judged on what it has: its
counts as before, its shares UNDECIDED (they have no interval), its ratios NOT JUDGED.

On the named scenarios (`summary.json`, several seeds): in psi-taint-release, ours below
psi-profile, hourly and at 60 s, on work lost, stall and spread (paired by seed, `ours_minus`:
the differences' interval wholly below 0, MISSED wholly above; a summary.json without them is
judged on intervals that do not overlap); in psi-skewed, ours' spread p95 at most half of
requests'; in scale-out, ours' work lost not clearly above requests-lnu's, its herd ratio
by load at most 1.5 (`tas_simulator.fair_share`; the count-based ratio beside it) and no violating
placement. Only the goals of the scenarios the summary holds are given.

Beside a goal, the clairvoyant row's figure is shown for what it is: ours' code fed true
values. It is not a bound (other decisions may do better, and it can do worse than ours). A
goal is said out of reach only from a bound: where a ratio goal is MISSED, the fluid limit's
ratio is shown as the bound (`tas_simulator.limit`: no scheduler goes below it), with the hindsight
placement's beside it (what placing once with no moves reaches; not a bound). A MISSED goal
no bound speaks to (the worse count, the gain share, the undominated share) says whether
another source's row meets it, judged as ours' is (`_with_reach`): one that does puts the goal
within a scheduler's reach, and none doing so is said as just that.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tas_simulator.jobs import CLAIRVOYANT, CLAIRVOYANT_OF, HINDSIGHT, LIMIT
from tas_simulator.sweep import BASELINE, LOST_GOAL, STALL_GOAL, WorseCause

OURS = CLAIRVOYANT_OF


class Verdict(enum.StrEnum):
    MET = "MET"
    MISSED = "MISSED"
    #: The interval straddles the goal: these runs cannot tell.
    UNDECIDED = "UNDECIDED"
    #: Its figures are missing (a contender or scenario not run).
    NOT_JUDGED = "NOT JUDGED"


@dataclass(frozen=True)
class Goal:
    name: str
    met: Verdict
    #: The figure as printed ("0.79x (0.68x to 0.90x) over 30 scenarios"), or why there is none.
    shown: str
    #: What it is held to ("goal >= 90%"); empty where `shown` says it all.
    target: str = ""
    #: What follows: ours fed true values, a bound where it is MISSED, the causes.
    notes: str = ""

    @property
    def judged(self) -> bool:
        return self.met is not Verdict.NOT_JUDGED

    def line(self) -> str:
        target = f" ({self.target})" if self.target else ""
        return f"  {self.met:10} {self.name}: {self.shown}{target}{self.notes}"


def _get(document: Mapping[str, Any], *path: str) -> Any:
    found: Any = document
    for part in path:
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def _not_judged(name: str, why: str = "no figure") -> Goal:
    return Goal(name, Verdict.NOT_JUDGED, why)


def _count_at_most(name: str, value: Any, limit: float, fmt: str = "{:.2f}") -> Goal:
    if value is None:
        return _not_judged(name)
    met = Verdict.MET if value <= limit else Verdict.MISSED
    return Goal(name, met, fmt.format(value), f"goal <= {limit:g}")


def _decide(*, met: bool, missed: bool, over: Mapping[str, Any] | None = None) -> Verdict:
    """MET, MISSED or UNDECIDED; an interval `over` fewer than 2 scenarios decides nothing (a
    bootstrap of one value is that value, with no spread known)."""
    if over is not None and over.get("scenarios", 2) < 2:
        return Verdict.UNDECIDED
    return Verdict.MET if met else Verdict.MISSED if missed else Verdict.UNDECIDED


#: The most decimal digits a figure is printed with to show which side of a goal's line it
#: is on (`_digits_apart`).
_MOST_DIGITS = 6


def _digits_apart(value: float, lines: Sequence[float], digits: int) -> int:
    """The fewest decimal digits, from `digits`, at which `value` does not print as a goal's
    line it is not on. At the usual precision an interval's end can land on the line itself
    (0.947 prints as "95%" beside "goal >= 95%"), and a MISSED or UNDECIDED verdict then
    reads as if it contradicted the figure printed beside it."""
    while digits < _MOST_DIGITS and any(
        value != line and round(value, digits) == round(line, digits) for line in lines
    ):
        digits += 1
    return digits


def _ratio(value: float, lines: Sequence[float] = ()) -> str:
    return f"{value:.{_digits_apart(value, lines, 2)}f}x"


def _points(value: float) -> str:
    """Percentage points with their sign, and the digits that keep a lead just under or over
    0 (the highest-share goal's line) from printing as "-0" or "+0"."""
    return f"{value:+.{_digits_apart(value, (0.0,), 0)}f}"


def _percent(value: float, lines: Sequence[float] = ()) -> str:
    return f"{value:.{_digits_apart(value, lines, 2) - 2}%}"


def _estimate(
    found: Mapping[str, Any], fmt: Callable[[float, Sequence[float]], str], *lines: float
) -> str:
    """`estimate (low to high)`, and over how many scenarios where the figure says; a figure
    near one of the goal's `lines` with the digits that show its side."""
    over = f" over {found['scenarios']} scenarios" if "scenarios" in found else ""
    estimate, low, high = (fmt(found[k], lines) for k in ("estimate", "low", "high"))
    return f"{estimate} ({low} to {high}){over}"


def _interval_of(row: Mapping[str, Any], *path: str) -> Mapping[str, Any] | None:
    found = _get(row, *path)
    if isinstance(found, Mapping) and all(k in found for k in ("estimate", "low", "high")):
        return found
    return None


# -- sweeps -----------------------------------------------------------------------------------

_LOST = "work lost against requests', geometric mean of the ratios over scenarios"
_STALL = "stall against requests', geometric mean of the ratios over scenarios"
_WORSE = (
    "scenarios clearly worse than requests (paired), "
    "but for a deschedule rule that accounts for the loss"
)
_CHURN_P95 = "evictions of one pod per hour, p95"
_CHURN_MAX = "evictions of one pod per hour, anywhere"
_GAIN = "share of the work-lost gain against the hindsight placement, median over scenarios"
_UNDOMINATED = "undominated against the best documented setting of every source"
_HIGHEST = "undominated: the highest share of any source"
#: The gain share's median goal and its interval's floor, and the undominated share's goal.
_GAIN_GOAL, _GAIN_FLOOR = 0.5, 0.4
_UNDOMINATED_GOAL = 0.95
#: Where a verdict row holds its share of the gain against the hindsight placement
#: (`tas_simulator.hindsight`): the median over the scenarios with anything to gain.
GAIN_PATH = ("share_of_gain_hindsight", "work_lost")
#: `tas_simulator.sweep.why_worse`'s causes, as the goal line says them.
_CAUSE_WORDS: Mapping[WorseCause, str] = {
    WorseCause.DESCHEDULE_RULE: "a deschedule rule's evictions displaced the extra loss (allowed)",
    WorseCause.RULE_WITHHELD: (
        "a rule kept pods off nodes whose free cores, with its evictions, cover the extra loss "
        "(not allowed)"
    ),
    WorseCause.RESTARTS_FOR_STALL: "trade restarts for clearly less stall",
    WorseCause.OTHER: "other (worse placements, moves that bought nothing)",
}


def sweep_goals(verdict: Mapping[str, Any]) -> list[Goal]:
    """Ours' goals on a sweep, each followed by what ours fed true values (the clairvoyant row)
    shows where the sweep has it, and by the bounds where a ratio goal is MISSED."""
    ours = _get(verdict, "contenders", OURS) or {}
    goals = _judged_sweep(ours, verdict)
    clairvoyant = _get(verdict, "references", CLAIRVOYANT)
    if isinstance(clairvoyant, Mapping) and clairvoyant:
        beside = _judged_sweep(clairvoyant, verdict)
        goals = [
            dataclasses.replace(g, notes=g.notes + f"; ours fed true values: {b.shown}")
            if b.judged and g.judged
            else g
            for g, b in zip(goals, beside, strict=True)
        ]
    goals = [_with_bounds(g, verdict) for g in goals]
    causes = _get(ours, "worse_than_requests", "by_cause")
    if isinstance(causes, Mapping) and any(causes.values()):
        # Every cause counted, the one the goal allows included, so the line adds up.
        said = [f"{causes[c]} {_CAUSE_WORDS[c]}" for c in WorseCause if causes.get(c)]
        goals = [
            dataclasses.replace(g, notes=g.notes + f"; of ours': {', '.join(said)}")
            if g.name == _WORSE
            else g
            for g in goals
        ]
    return [_with_reach(g, verdict) for g in goals]


def _with_bounds(goal: Goal, verdict: Mapping[str, Any]) -> Goal:
    """A MISSED ratio goal with the fluid limit's ratio, the bound no scheduler goes below,
    and the hindsight placement's, what placing once with no moves reaches (not a bound: a
    scheduler that moves pods can do better); either ratio goal not MET with the scenarios
    where the limit shows no scheduler meets both (`sweep.both_goals_within_reach`)."""
    paths = {_LOST: "work_lost_vs_requests", _STALL: "stall_vs_requests"}
    if goal.met is Verdict.MET or goal.name not in paths:
        return goal
    notes = goal.notes
    references = _get(verdict, "references") or {}
    joint = _get(references, LIMIT, "both_goals_out_of_reach")
    if joint:
        notes += (
            f"; the fluid limit's joint bound: in {len(joint['scenarios'])} of {joint['of']}"
            f" scenarios no scheduler loses at most {LOST_GOAL:g}x requests' work and stalls"
            f" at most {STALL_GOAL:g}x requests'"
        )
    if goal.met is not Verdict.MISSED:
        return dataclasses.replace(goal, notes=notes)
    limit = _interval_of(_get(references, LIMIT) or {}, "population", paths[goal.name])
    if limit is not None:
        notes += f"; bound: the fluid limit {_estimate(limit, _ratio)}"
    hindsight = _interval_of(_get(references, HINDSIGHT) or {}, "population", paths[goal.name])
    if hindsight is not None:
        notes += f"; the hindsight placement (no moves) {_estimate(hindsight, _ratio)}"
    return dataclasses.replace(goal, notes=notes)


#: The goals with no bound of their own, and how to rank a source's figure on one (higher is
#: better): the scenarios worse than requests, the gain share's median, the undominated share.
_RANKED: Mapping[str, Callable[[Mapping[str, Any]], float | None]] = {
    _WORSE: lambda row: None if (n := _worse_but_for_rules(row)) is None else -n,
    _GAIN: lambda row: _get(row, "population", "share_of_gain_hindsight", "estimate"),
    _UNDOMINATED: lambda row: _get(row, "source", "undominated", "estimate"),
}


def _with_reach(goal: Goal, verdict: Mapping[str, Any]) -> Goal:
    """A MISSED goal that has no fluid-limit bound (a count or a share), with whether a
    scheduler here meets it: the other sources' best figure on it, judged as ours' is.

    For these goals the limit and the hindsight placement say nothing (the limit bounds a sum,
    and the gain share is measured against the hindsight placement itself), so the evidence is
    the contenders: one that meets the goal shows it within a scheduler's reach; none meeting
    it shows only that none of them does. Requests is left out of "worse than requests", where
    it is the yardstick."""
    rank = _RANKED.get(goal.name)
    if goal.met is not Verdict.MISSED or rank is None:
        return goal
    ours = _get(verdict, "contenders", OURS, "source", "name") or OURS
    judged: list[tuple[bool, float, str, Goal]] = []
    for name, row in (_get(verdict, "contenders") or {}).items():
        source = _get(row, "source", "name") or name
        if name == OURS or source == ours or (goal.name == _WORSE and name == BASELINE):
            continue
        value = rank(row)
        found = next((g for g in _judged_sweep(row, verdict) if g.name == goal.name), None)
        if value is None or found is None or not found.judged:
            continue
        # The undominated share is the source's (every row of it says the same): name it so.
        said = source if goal.name == _UNDOMINATED else name
        judged.append((found.met is Verdict.MET, value, said, found))
    if not judged:
        return goal
    # A tie goes to the first name, so the line is the same however the sweep lists them.
    meets, _, said, found = max(sorted(judged, key=lambda j: j[2]), key=lambda j: (j[0], j[1]))
    if meets:
        notes = f"; within a scheduler's reach: {said} meets it, {found.shown}"
    else:
        notes = f"; no other source meets it either: the best, {said}, {found.shown}"
    return dataclasses.replace(goal, notes=goal.notes + notes)


def _judged_sweep(row: Mapping[str, Any], verdict: Mapping[str, Any]) -> list[Goal]:
    """The goals on one verdict row (ours, or the clairvoyant), in print order."""
    if "population" not in row:
        return _judged_old_sweep(row, verdict)
    return [
        _lost_goal(_interval_of(row, "population", "work_lost_vs_requests")),
        _stall_goal(_interval_of(row, "population", "stall_vs_requests")),
        _count_at_most(_WORSE, _worse_but_for_rules(row), 0, "{:.0f}"),
        _count_at_most(_CHURN_P95, _get(row, "max_evictions_per_pod_hour", "p95"), 2, "{:.2f}"),
        _count_at_most(_CHURN_MAX, _get(row, "max_evictions_per_pod_hour", "max"), 3, "{:.0f}"),
        _gain_goal(
            _interval_of(row, "population", "share_of_gain_hindsight"),
            _interval_of(row, "population", "share_of_gain_limit"),
        ),
        _undominated_goal(_interval_of(row, "source", "undominated")),
        _highest_goal(
            _interval_of(row, "source", "lead"),
            _get(row, "source", "lead", "next"),
            _get(row, "source", "undominated", "scenarios"),
        ),
    ]


def _lost_goal(found: Mapping[str, Any] | None) -> Goal:
    if found is None:
        return _not_judged(_LOST)
    met = found["estimate"] <= LOST_GOAL and found["high"] < 1.0
    goal = Goal(
        _LOST,
        _decide(met=met, missed=found["low"] > LOST_GOAL, over=found),
        _estimate(found, _ratio, LOST_GOAL, 1.0),
        "goal <= 0.85x, its interval below 1",
    )
    # Above 0.85 it heads for MISSED (its lower end over 0.85); at or under, for MET (its
    # upper end under 1).
    line = LOST_GOAL if found["estimate"] > LOST_GOAL else 1.0
    return _with_size_to_decide(goal, found, line, log=True)


def _stall_goal(found: Mapping[str, Any] | None) -> Goal:
    if found is None:
        return _not_judged(_STALL)
    goal = Goal(
        _STALL,
        _decide(met=found["high"] <= STALL_GOAL, missed=found["low"] > STALL_GOAL, over=found),
        _estimate(found, _ratio, STALL_GOAL),
        "goal: its interval at most 1.00x",
    )
    return _with_size_to_decide(goal, found, STALL_GOAL, log=True)


def _gain_goal(hindsight: Mapping[str, Any] | None, limit: Mapping[str, Any] | None) -> Goal:
    if hindsight is None:
        return _not_judged(_GAIN)
    met = hindsight["estimate"] >= _GAIN_GOAL and hindsight["low"] >= _GAIN_FLOOR
    notes = "" if limit is None else f"; against the fluid limit {_estimate(limit, _percent)}"
    goal = Goal(
        _GAIN,
        _decide(met=met, missed=hindsight["high"] < _GAIN_GOAL, over=hindsight),
        _estimate(hindsight, _percent, _GAIN_GOAL, _GAIN_FLOOR),
        "goal >= 50%, its interval from 40%",
        notes,
    )
    # Under 50% it heads for MISSED (its upper end under 50%); at or above, for MET (its
    # lower end from 40%).
    line = _GAIN_GOAL if hindsight["estimate"] < _GAIN_GOAL else _GAIN_FLOOR
    return _with_size_to_decide(goal, hindsight, line)


def _undominated_goal(found: Mapping[str, Any] | None) -> Goal:
    if found is None:
        return _not_judged(_UNDOMINATED)
    goal = Goal(
        _UNDOMINATED,
        _decide(
            met=found["low"] >= _UNDOMINATED_GOAL,
            missed=found["high"] < _UNDOMINATED_GOAL,
            over=found,
        ),
        # 1 too: a share that is not everywhere should not print as 100%.
        _estimate(found, _percent, _UNDOMINATED_GOAL, 1.0),
        "goal >= 95%",
    )
    return _with_size_to_decide(goal, found, _UNDOMINATED_GOAL)


def _highest_goal(lead: Mapping[str, Any] | None, following: Any, scenarios: Any) -> Goal:
    """`scenarios`: over how many the lead was judged (the undominated share's), which the
    lead itself does not say."""
    if lead is None:
        return _not_judged(_HIGHEST)
    low, estimate, high = (_points(lead[k] * 100) for k in ("low", "estimate", "high"))
    points = f"{estimate} points ({low} to {high})"
    goal = Goal(
        _HIGHEST,
        _decide(met=lead["low"] >= 0.0, missed=lead["high"] < 0.0),
        f"{points} against the next, {following}",
        "goal: at or above 0, a tie allowed",
    )
    return _with_size_to_decide(goal, lead, 0.0, scenarios=scenarios)


def _with_size_to_decide(
    goal: Goal, found: Mapping[str, Any], line: float, *, log: bool = False, scenarios: Any = None
) -> Goal:
    """An UNDECIDED goal, with about how many scenarios a draw needs for the interval's end
    nearer `line` to cross it, if the estimate holds and the interval narrows as 1/sqrt(n)
    (ratios on the log scale, where their bootstrap intervals are about symmetric). Where the
    estimate sits on the line, no size decides it; where nothing says over how many scenarios
    the interval was drawn (`scenarios` stands in where `found` does not say), nothing is added.

    A planning figure for `make compare DEFAULT_COUNT=N LARGE_SLOW_COUNT=M`, not a verdict:
    the size is fixed from it before the run, and the run is looked at once
    (docs/decisions.md, "Deciding a goal make compare leaves UNDECIDED")."""
    over = found.get("scenarios", scenarios)
    if goal.met is not Verdict.UNDECIDED or not isinstance(over, int) or over < 2:
        return goal
    scale = math.log if log else float
    estimate, low, high, at = (
        scale(v) for v in (found["estimate"], found["low"], found["high"], line)
    )
    if estimate == at:
        said = "no size of draw decides it while its estimate sits on the line"
    else:
        # The end that has to cross: the upper one where the estimate is under the line.
        spread = high - estimate if estimate < at else estimate - low
        # Rounded first, so a ratio of exactly 6 computed as 5.999... is not one scenario short.
        size = math.ceil(round(over * (spread / abs(at - estimate)) ** 2, 6))
        said = (
            f"about {size:,} scenarios would decide it, if the estimate holds and the interval "
            "narrows as 1/sqrt(n)"
        )
    return dataclasses.replace(goal, notes=goal.notes + f"; {said}")


def _worse_but_for_rules(row: Mapping[str, Any]) -> float | None:
    """Scenarios clearly worse than requests on work lost, less those where the displaced
    core-seconds of a deschedule rule's evictions cover the extra loss."""
    worse = _get(row, "worse_than_requests", "scenarios")
    if worse is None:
        return None
    allowed = _get(row, "worse_than_requests", "by_cause", str(WorseCause.DESCHEDULE_RULE)) or 0
    return float(worse - allowed)


def _judged_old_sweep(row: Mapping[str, Any], verdict: Mapping[str, Any]) -> list[Goal]:
    """A sweep.json written before its figures had intervals over scenarios: its counts are
    judged (on its own, unpaired test), its shares are UNDECIDED, its ratios NOT JUDGED."""
    if not row:
        return [
            _not_judged(name)
            for name in (
                _LOST,
                _STALL,
                _WORSE,
                _CHURN_P95,
                _CHURN_MAX,
                _GAIN,
                _UNDOMINATED,
                _HIGHEST,
            )
        ]
    no_interval = "; no interval: a sweep written before intervals over scenarios"
    undecided = [
        (_GAIN, _get(row, *GAIN_PATH, "median"), "goal >= 50%, its interval from 40%"),
        (_UNDOMINATED, _get(row, "undominated_share"), "goal >= 95%"),
    ]
    shares = [
        Goal(name, Verdict.UNDECIDED, _percent(value), target, no_interval)
        if value is not None
        else _not_judged(name)
        for name, value, target in undecided
    ]
    worse = _count_at_most(_WORSE, _worse_but_for_rules(row), 0, "{:.0f}")
    if worse.judged:
        worse = dataclasses.replace(worse, notes="; counted with unpaired intervals")
    return [
        _not_judged(_LOST, "no figure in this sweep.json"),
        _not_judged(_STALL, "no figure in this sweep.json"),
        worse,
        _count_at_most(_CHURN_P95, _get(row, "max_evictions_per_pod_hour", "p95"), 2, "{:.2f}"),
        _count_at_most(_CHURN_MAX, _get(row, "max_evictions_per_pod_hour", "max"), 3, "{:.0f}"),
        shares[0],
        shares[1],
        _not_judged(_HIGHEST, "no figure in this sweep.json"),
    ]


# -- named scenarios --------------------------------------------------------------------------


def _below(summary: Mapping[str, Any], scenario: str, figure: Sequence[str], other: str) -> Goal:
    """Ours below `other`: paired by seed where summary.json has ours' differences (MET when
    their interval lies wholly below 0, MISSED wholly above), else on the two intervals (MET
    when ours' lies wholly below, MISSED wholly above)."""
    name = f"{scenario}: ours below {other} on {'.'.join(figure)}"
    entry = _get(summary, "scenarios", scenario) or {}
    paired = _get(entry, "ours_minus", other, ".".join(figure))
    if paired is not None:
        low, high = paired
        shown = f"ours - {other}, paired by seed: [{low:.4g}, {high:.4g}]"
        return Goal(name, _decide(met=high < 0, missed=low > 0), shown)
    ours = _get(entry, "ci95", OURS, *figure)
    theirs = _get(entry, "ci95", other, *figure)
    if ours is None or theirs is None:
        return _not_judged(name, "not run")
    shown = f"ours [{ours[0]:.4g}, {ours[1]:.4g}], {other} [{theirs[0]:.4g}, {theirs[1]:.4g}]"
    return Goal(name, _decide(met=ours[1] < theirs[0], missed=ours[0] > theirs[1]), shown)


def _beside(goal: Goal, true_values: Goal) -> Goal:
    """`goal` followed by the same figure for ours fed true values (none where it has none)."""
    if not true_values.judged or not goal.judged:
        return goal
    return dataclasses.replace(
        goal, notes=goal.notes + f"; ours fed true values: {true_values.shown}"
    )


def named_goals(summary: Mapping[str, Any]) -> list[Goal]:
    """The goals of the named scenarios the summary holds (none for a scenario not run)."""
    ran = _get(summary, "scenarios") or {}
    goals: list[Goal] = []
    if "psi-taint-release" in ran:
        # Against the PSI profile at its shipped hourly cadence, and at 60 s: an hourly
        # descheduler acts once in this scenario, so beating it alone would say little.
        goals += [
            _below(summary, "psi-taint-release", figure, other)
            for other in ("psi-profile", "psi-profile-60s")
            for figure in (("work_lost", "core_seconds"), ("stall",), ("pressure_spread", "p95"))
        ]
    if "psi-skewed" in ran:
        goals.append(_skewed_goal(summary))
    if "scale-out" in ran:
        goals += _scale_out_goals(summary)
    return goals


def _skewed_goal(summary: Mapping[str, Any]) -> Goal:
    figures = ("scenarios", "psi-skewed")
    ours = _get(summary, *figures, "contenders", OURS, "pressure_spread", "p95")
    requests = _get(summary, *figures, "contenders", "requests", "pressure_spread", "p95")
    name = "psi-skewed: ours' spread p95 against requests'"
    if ours is None or not requests:
        return _not_judged(name, "not run")
    spread = _get(summary, *figures, "references", CLAIRVOYANT, "pressure_spread", "p95")
    true_values = _count_at_most(
        name, None if spread is None else spread / requests, 0.5, "{:.2f}x"
    )
    return _beside(_count_at_most(name, ours / requests, 0.5, "{:.2f}x"), true_values)


def _scale_out_goals(summary: Mapping[str, Any]) -> list[Goal]:
    scenario = "scale-out"
    ours = _get(summary, "scenarios", scenario, "ci95", OURS, "work_lost", "core_seconds")
    lnu = _get(summary, "scenarios", scenario, "ci95", "requests-lnu", "work_lost", "core_seconds")
    paired = _get(summary, "scenarios", scenario, "ours_minus", "requests-lnu")
    name = f"{scenario}: ours' work lost at most requests-lnu's"
    if isinstance(paired, Mapping) and "work_lost.core_seconds" in paired:
        # Not clearly above, paired by seed.
        low, high = paired["work_lost.core_seconds"]
        shown = f"ours - requests-lnu, paired by seed: [{low:.4g}, {high:.4g}]"
        lost = Goal(name, Verdict.MISSED if low > 0 else Verdict.MET, shown)
    elif ours is None or lnu is None:
        lost = _not_judged(name, "not run")
    else:
        shown = f"ours [{ours[0]:.4g}, {ours[1]:.4g}], requests-lnu [{lnu[0]:.4g}, {lnu[1]:.4g}]"
        lost = Goal(name, Verdict.MET if ours[0] <= lnu[1] else Verdict.MISSED, shown)
    figures = _scale_out_figures(summary, ("contenders", OURS))
    true_values = _scale_out_figures(summary, ("references", CLAIRVOYANT))
    return [lost, *map(_beside, figures, true_values)]


def _scale_out_figures(summary: Mapping[str, Any], row: tuple[str, str]) -> list[Goal]:
    figures = ("scenarios", "scale-out", *row)
    return [
        _herd_goal(summary, figures),
        _count_at_most(
            "scale-out: ours' violating placements",
            _get(summary, *figures, "violating_placements"),
            0,
            "{:.1f}",
        ),
    ]


def _herd_goal(summary: Mapping[str, Any], figures: tuple[str, ...]) -> Goal:
    """Judged against the load-balanced fair share (`tas_simulator.fair_share`): the count-based one
    counts the busy nodes as places for the burst, so on scale-out it is met only by piling
    burst pods onto nodes under pressure, against the goal of no violating placement. The
    count-based figure is shown beside it."""
    goal = _count_at_most(
        "scale-out: ours' herd ratio by load",
        _get(summary, *figures, "herd_ratio_by_load"),
        1.5,
    )
    by_count = _get(summary, *figures, "herd_ratio")
    if not goal.judged or by_count is None:
        return goal
    return dataclasses.replace(goal, shown=f"{goal.shown} (by count {by_count:.2f})")


def tally(goals: Sequence[Goal]) -> str:
    """ "2 MET, 1 MISSED, 3 UNDECIDED" over the goals judged (and how many were not)."""
    counts = {v: sum(1 for g in goals if g.met is v) for v in Verdict}
    said = ", ".join(f"{counts[v]} {v}" for v in (Verdict.MET, Verdict.MISSED, Verdict.UNDECIDED))
    missing = counts[Verdict.NOT_JUDGED]
    return said + (f" ({missing} NOT JUDGED: no figure)" if missing else "")


def report(title: str, goals: Sequence[Goal]) -> str:
    return "\n".join([f"{title}: {tally(goals)}", *(g.line() for g in goals)])
