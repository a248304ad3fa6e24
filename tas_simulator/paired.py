"""One contender on two sweeps of the same scenarios and seeds: what a change moved, paired.

A change to `ours` (a rule, a default) is judged on a generated sweep, never on one named
scenario's table (issue 26). Two sweeps of the same family, count and seeds run the same
scenarios with the same randomness, so each seed's figures can be paired: the difference
after - before on one seed removes most of the scenario's and the seed's own variance, and a
scenario "clearly" moved on a figure when the 95% interval of its per-seed differences
(Student's t, `tas_simulator.stats`) lies wholly on one side of zero. With one seed nothing is
clear: the interval is a point, and no claim is made on it.

Pure: two `runs.json` documents in (`tas_simulator.sweep.runs_document`), a `Paired` out.
`tas sweep-diff` reads the files and prints `table(...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tas.problems import ProblemsError
from tas_simulator.stats import interval

#: The figures a change is judged on, as (name, unit, how to read it from one run's figures).
#: Work lost and stall are what users feel; violating placements and evictions are its costs.
FIGURES: tuple[tuple[str, str, Callable[[Mapping[str, Any]], float]], ...] = (
    ("work lost", "core-s", lambda run: float(run["work_lost"]["core_seconds"])),
    ("stall", "node-s", lambda run: float(run["stall"])),
    ("violating placements", "pods", lambda run: float(run["violating_placements"])),
    ("evictions", "pods", lambda run: float(run["evictions"]["total"])),
)


class UnpairedError(ProblemsError):
    """The two sweeps do not hold the same runs, so they cannot be paired: `problems` lists
    every mismatch (a different count, seed or family gives different scenarios)."""


@dataclass(frozen=True)
class Moved:
    """A scenario whose figure moved clearly: its means before and after."""

    scenario: str
    before: float
    after: float


@dataclass
class FigureDiff:
    """One figure over the whole sweep: totals over every run, and the scenarios that moved."""

    name: str
    unit: str
    before: float = 0.0
    after: float = 0.0
    lower: list[Moved] = field(default_factory=list)
    higher: list[Moved] = field(default_factory=list)

    @property
    def change(self) -> float | None:
        """after / before - 1, or None where before is 0."""
        return self.after / self.before - 1.0 if self.before else None


@dataclass(frozen=True)
class Paired:
    contender: str
    scenarios: int
    seeds: int
    #: Scenarios where any run's figure differs at all (the rest the change did not touch).
    differ: tuple[str, ...]
    figures: tuple[FigureDiff, ...]


def _runs(document: Mapping[str, Any], which: str, problems: list[str]) -> Mapping[str, Any]:
    runs = document.get("runs") if isinstance(document, Mapping) else None
    if not isinstance(runs, Mapping):
        problems.append(f"{which}: no 'runs' mapping (is it a sweep's runs.json?)")
        return {}
    return runs


def _seeded(runs: Mapping[str, Any], scenario: str, contender: str) -> Mapping[str, Any]:
    contenders = runs.get(scenario)
    seeded = contenders.get(contender) if isinstance(contenders, Mapping) else None
    return seeded if isinstance(seeded, Mapping) else {}


def _check(
    before: Mapping[str, Any], after: Mapping[str, Any], contender: str, problems: list[str]
) -> None:
    if set(before) != set(after):
        only = sorted(set(before) ^ set(after))
        more = f" and {len(only) - 5} more" if len(only) > 5 else ""
        problems.append(f"scenarios in one sweep only: {', '.join(only[:5])}{more}")
        return
    for scenario in sorted(before):
        one, two = _seeded(before, scenario, contender), _seeded(after, scenario, contender)
        if not one or not two:
            problems.append(f"{scenario}: {contender} did not run in both sweeps")
        elif set(one) != set(two):
            problems.append(f"{scenario}: different seeds ({sorted(one)} against {sorted(two)})")
        elif any(not _readable(run) for run in (*one.values(), *two.values())):
            problems.append(f"{scenario}: a run of {contender} has no figures")


def _readable(run: Any) -> bool:
    """Every figure of `FIGURES` can be read from the run (an unavailable run has none)."""
    try:
        for _, _, read in FIGURES:
            read(run)
    except (KeyError, TypeError, ValueError):
        return False
    return True


def pair_sweeps(before: Mapping[str, Any], after: Mapping[str, Any], *, contender: str) -> Paired:
    """`contender`'s figures in `after` against `before`, paired by scenario and seed. Raises
    `UnpairedError` listing every mismatch when the two do not hold the same runs."""
    problems: list[str] = []
    runs_before = _runs(before, "before", problems)
    runs_after = _runs(after, "after", problems)
    if not problems:
        _check(runs_before, runs_after, contender, problems)
    if problems:
        raise UnpairedError(problems)
    diffs = tuple(FigureDiff(name, unit) for name, unit, _ in FIGURES)
    differ: list[str] = []
    seeds = 0
    for scenario in sorted(runs_before):
        one = _seeded(runs_before, scenario, contender)
        two = _seeded(runs_after, scenario, contender)
        order = sorted(one)
        seeds = max(seeds, len(order))
        touched = False
        for diff, (_, _, read) in zip(diffs, FIGURES, strict=True):
            xs = [read(one[seed]) for seed in order]
            ys = [read(two[seed]) for seed in order]
            diff.before += sum(xs)
            diff.after += sum(ys)
            deltas = [y - x for x, y in zip(xs, ys, strict=True)]
            touched = touched or any(deltas)
            moved = interval(deltas)
            if moved.n < 2:
                continue
            if moved.high < 0 or moved.low > 0:
                entry = Moved(scenario, sum(xs) / len(xs), sum(ys) / len(ys))
                (diff.lower if moved.high < 0 else diff.higher).append(entry)
        if touched:
            differ.append(scenario)
    return Paired(contender, len(runs_before), seeds, tuple(differ), diffs)


def _change(diff: FigureDiff) -> str:
    return "-" if diff.change is None else f"{diff.change:+.1%}"


def _listed(moved: Sequence[Moved], most: int) -> str:
    shown = [f"{m.scenario} ({m.before:.4g} -> {m.after:.4g})" for m in moved[:most]]
    more = f", and {len(moved) - most} more" if len(moved) > most else ""
    return ", ".join(shown) + more


def table(paired: Paired, *, most: int = 8) -> str:
    """The comparison as the terminal shows it: totals, and the scenarios that moved clearly."""
    lines = [
        f"{paired.contender}, after against before: {paired.scenarios} scenarios x "
        f"{paired.seeds} seeds, paired by seed; {len(paired.differ)} scenarios differ at all",
        f"{'figure':28} {'before':>14} {'after':>14} {'change':>8}  clearly lower  clearly higher",
    ]
    for diff in paired.figures:
        name = f"{diff.name} ({diff.unit})"
        lines.append(
            f"{name:28} {diff.before:14.1f} {diff.after:14.1f} {_change(diff):>8}  "
            f"{len(diff.lower):13}  {len(diff.higher):14}"
        )
    if paired.seeds < 2:
        lines.append("one seed per scenario: no interval, so no scenario is said to move clearly")
    for diff in paired.figures:
        for words, moved in (("lower", diff.lower), ("higher", diff.higher)):
            if moved:
                lines.append(f"{diff.name} clearly {words}: {_listed(moved, most)}")
    return "\n".join(lines)
