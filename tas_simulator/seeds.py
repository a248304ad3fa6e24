"""One scenario on several seeds: which seeds, and the figures over them.

The seeds of a scenario are its own seed and the next ones (`seed, seed+1, ...`), or, with
`--seed S`, S and the next ones: a run on 5 seeds always includes the run on 1, so a table
can be traced back to a single-seed run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tas_simulator.figures import Figures, Series
from tas_simulator.jobs import CLAIRVOYANT, LIMIT, REFERENCES, Job, run_jobs
from tas_simulator.runner import RunResult, ScenarioResult
from tas_simulator.scenario import Scenario
from tas_simulator.stats import (
    Interval,
    aggregate,
    clearly_below_zero,
    nest,
    numeric_leaves,
    paired_interval,
)

#: The figure that decides "best" in a sweep, and the one the README leads with.
HEADLINE = "work_lost.core_seconds"
#: Plain kube-scheduler: what every gain is measured from.
BASELINE = "requests"
#: The figures on which "the share of the achievable gain" is given, by dotted path.
GAIN_FIGURES = {"work_lost": HEADLINE, "stall": "stall"}
#: Below this much achievable gain (1 core-second, 1 node-second) the share is not given:
#: where requests is already at the limit, any ratio is noise over nothing.
NEGLIGIBLE_GAIN = 1.0
#: A family's shares of the gain are clamped to this range (`clamped_share`) before their
#: median and its interval are taken: a scenario with a small achievable gain can give any
#: share (-4000% for 40 core-s lost beyond requests where 1 was to gain), and no one scenario
#: should weigh more than "lost as much again as there was to gain" or "all of it".
SHARE_RANGE = (-1.0, 1.0)


def seeds_for(base: int, count: int) -> list[int]:
    if count < 1:
        raise ValueError("at least one seed")
    return [base + i for i in range(count)]


@dataclass
class SeededFigures:
    """One contender's figures on each seed of one scenario."""

    contender: str
    #: Each seed's figures, added as its run ends (a seed's figures are never replaced).
    by_seed: dict[int, Figures] = field(default_factory=dict)
    #: `intervals()` for the seeds it was computed on: the summary, the table, the goals and
    #: the sweep's tallies all read it, and aggregating is most of their time.
    _aggregated: tuple[tuple[int, ...], Mapping[str, Interval]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _per_seed: tuple[tuple[int, ...], Mapping[str, Mapping[int, float]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def intervals(self) -> Mapping[str, Interval]:
        """Each figure's mean and 95% interval over the seeds, by dotted path; computed once
        for the seeds there are (again after one is added)."""
        seeds = tuple(sorted(self.by_seed))
        if self._aggregated is None or self._aggregated[0] != seeds:
            self._aggregated = (seeds, aggregate([self.by_seed[s] for s in seeds]))
        return self._aggregated[1]

    def means(self) -> dict[str, Any]:
        """The figures' shape with each number replaced by its mean over the seeds. A value
        that is missing on some seeds (a median of no evacuations) is the mean of the rest,
        and stays missing (None) where it is missing on every seed."""
        found = {path: i.mean for path, i in self.intervals().items()}
        shape: dict[str, Any] = {}
        for seed in sorted(self.by_seed):
            _merge_shape(shape, self.by_seed[seed])
        return _fill(shape, found, "")

    def ci95(self) -> dict[str, Any]:
        return nest({path: [i.low, i.high] for path, i in self.intervals().items()})

    def per_seed(self) -> Mapping[str, Mapping[int, float]]:
        """Each figure's value on each seed that has it, by dotted path: what a paired test
        (`paired_with`) reads."""
        seeds = tuple(sorted(self.by_seed))
        if self._per_seed is None or self._per_seed[0] != seeds:
            found: dict[str, dict[int, float]] = {}
            for seed in seeds:
                for path, value in numeric_leaves(self.by_seed[seed]).items():
                    found.setdefault(path, {})[seed] = value
            self._per_seed = (seeds, found)
        return self._per_seed[1]

    def paired_with(self, other: SeededFigures, path: str) -> Interval | None:
        """The interval of this row's figure minus `other`'s, paired by seed over the seeds
        both have it on (`tas_simulator.stats.paired_interval`); None where they share none."""
        mine, theirs = self.per_seed().get(path, {}), other.per_seed().get(path, {})
        seeds = sorted(set(mine) & set(theirs))
        if not seeds:
            return None
        return paired_interval([mine[s] for s in seeds], [theirs[s] for s in seeds])


@dataclass
class SeededResult:
    """One scenario on several seeds: each contender's figures per seed, the first seed's
    runs in full (series, eviction times) for the node chart, and each contender's series on
    every seed (`series[contender][seed]`: the first seed's in full, the others' spread and
    evictions over time only) for the spread chart's intervals."""

    scenario: Scenario
    seeds: list[int]
    contenders: dict[str, SeededFigures] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    first: ScenarioResult | None = None
    series: dict[str, dict[int, Series]] = field(default_factory=dict)
    #: The reference rows (`tas_simulator.jobs.REFERENCES`) on the same seeds: never contenders,
    #: never judged "best", only a measure of how far every contender is from what is
    #: possible. A reference that cannot run (ours unavailable) is absent.
    references: dict[str, SeededFigures] = field(default_factory=dict)


def run_seeded(
    scenarios: Sequence[Scenario],
    *,
    contenders: Sequence[str],
    seeds: int,
    base_seed: int | None,
    workers: int | None,
    dask_address: str | None,
    log_path: Path,
    progress: Callable[[int, int], None],
) -> list[SeededResult]:
    """Every scenario x seed x contender as one batch of jobs (so all cores stay busy across
    scenarios), then grouped back per scenario. The first seed's runs keep their series in
    full for the node chart; every run keeps its spread and evictions over time. The
    reference rows run as jobs of the same batch, on the same seeds."""
    jobs = []
    plans: list[tuple[Scenario, list[int]]] = []
    for scenario in scenarios:
        chosen = seeds_for(scenario.seed if base_seed is None else base_seed, seeds)
        plans.append((scenario, chosen))
        for seed in chosen:
            for contender in contenders:
                jobs.append(Job(scenario, contender, seed, keep_series=seed == chosen[0]))
            jobs.extend(Job(scenario, reference, seed) for reference in REFERENCES)
    finished = iter(
        run_jobs(
            jobs,
            workers=workers,
            dask_address=dask_address,
            log_path=log_path,
            progress=progress,
        )
    )
    results = []
    for scenario, chosen in plans:
        seeded = SeededResult(scenario, chosen, first=ScenarioResult(scenario, chosen[0]))
        for _seed in chosen:
            for _contender in contenders:
                job = next(finished)
                if job.figures is None:
                    seeded.unavailable[job.contender] = job.unavailable
                    continue
                figures = seeded.contenders.setdefault(job.contender, SeededFigures(job.contender))
                figures.by_seed[job.seed] = job.figures
                if job.series is not None:
                    seeded.series.setdefault(job.contender, {})[job.seed] = job.series
                if job.seed == chosen[0] and job.series is not None and seeded.first is not None:
                    seeded.first.results[job.contender] = RunResult(
                        job.contender, job.figures, job.series, list(job.eviction_times)
                    )
            for _reference in REFERENCES:
                job = next(finished)
                if job.figures is not None:
                    reference = seeded.references.setdefault(
                        job.contender, SeededFigures(job.contender)
                    )
                    reference.by_seed[job.seed] = job.figures
        if seeded.first is not None:
            seeded.first.unavailable = dict(seeded.unavailable)
        results.append(seeded)
    return results


def best_by_figure(
    contenders: Mapping[str, SeededFigures], figures: Sequence[str]
) -> dict[str, str | None]:
    """For each figure path (lower is better), the clear best contender or None (a tie):
    paired by seed (`paired_best`)."""
    return {figure: paired_best(contenders, figure) for figure in figures}


def paired_best(rows: Mapping[str, SeededFigures], path: str) -> str | None:
    """The one row (lowest mean) whose figure is clearly below every other row's, paired by
    seed (the interval of the per-seed differences wholly below 0); None on a tie, and for a
    lone row: it is best of nothing."""
    present = {c: s for c, s in rows.items() if path in s.per_seed()}
    if len(present) < 2:
        return None
    leader = min(present, key=lambda c: (present[c].intervals()[path].mean, c))
    for contender, other in present.items():
        if contender == leader:
            continue
        difference = present[leader].paired_with(other, path)
        if difference is None or not clearly_below_zero(difference):
            return None
    return leader


def paired_against(
    row: SeededFigures, others: Mapping[str, SeededFigures], paths: Sequence[str]
) -> dict[str, dict[str, list[float]]]:
    """`row` less each other row on each of `paths`, paired by seed: `{other: {path: [low,
    high]}}` of the per-seed differences' 95% interval (below 0: `row` is lower)."""
    found: dict[str, dict[str, list[float]]] = {}
    for name, other in others.items():
        for path in paths:
            difference = row.paired_with(other, path)
            if difference is not None:
                found.setdefault(name, {})[path] = [difference.low, difference.high]
    return found


def _merge_shape(shape: dict[str, Any], figures: Mapping[str, Any]) -> None:
    for key, value in figures.items():
        if isinstance(value, Mapping):
            _merge_shape(shape.setdefault(key, {}), value)
        else:
            shape.setdefault(key, None)


def _fill(shape: Mapping[str, Any], found: Mapping[str, float], prefix: str) -> dict[str, Any]:
    return {
        key: _fill(value, found, f"{prefix}{key}.")
        if isinstance(value, dict)
        else found.get(f"{prefix}{key}")
        for key, value in shape.items()
    }


def share_of_gain(baseline: float, value: float, limit: float) -> float | None:
    """(baseline - value) / (baseline - limit): 1 reaches the limit, 0 is no better than
    the baseline, negative is worse; None where there is (almost) nothing to gain."""
    achievable = baseline - limit
    if achievable < NEGLIGIBLE_GAIN:
        return None
    return (baseline - value) / achievable


def something_to_gain(baseline: float, reference: float) -> bool:
    """A scenario with anything to gain against a reference: requests' mean over the seeds is
    above the reference's by at least `NEGLIGIBLE_GAIN` (1 core-second). Nothing more is asked:
    a filter on requests' spread would drop the scenarios where requests varies most, among
    them those where a contender beat requests on every seed."""
    return baseline - reference >= NEGLIGIBLE_GAIN


def clamped_share(share: float) -> float:
    """A share of the gain within `SHARE_RANGE`, for a family's median and its interval."""
    low, high = SHARE_RANGE
    return min(high, max(low, share))


def shares_of_gain(
    result: SeededResult, *, reference: str = LIMIT
) -> dict[str, dict[str, float | None]]:
    """Per contender (and the clairvoyant reference), its share of the achievable gain on
    each of `GAIN_FIGURES` against `reference` (the fluid limit, or the hindsight placement),
    from the means over the seeds; empty without requests or the reference."""
    base = result.contenders.get(BASELINE)
    limit = result.references.get(reference)
    if base is None or limit is None:
        return {}
    rows = dict(result.contenders)
    if CLAIRVOYANT in result.references:
        rows[CLAIRVOYANT] = result.references[CLAIRVOYANT]
    base_means, limit_means = base.intervals(), limit.intervals()
    shares: dict[str, dict[str, float | None]] = {}
    for name, seeded in rows.items():
        means = seeded.intervals()
        shares[name] = {
            key: share_of_gain(base_means[path].mean, means[path].mean, limit_means[path].mean)
            if path in means and path in base_means and path in limit_means
            else None
            for key, path in GAIN_FIGURES.items()
        }
    return shares
