"""`tas sweep`: many drawn scenarios, every contender, several seeds, one verdict per contender.

Each seed is one world every contender meets, so every comparison of two rows in a scenario is
paired by seed: the 95% interval of the per-seed differences
(`tas_simulator.stats.paired_interval`),
"clearly" better or worse only when it lies wholly on one side of 0 (with two seeds or more).

Per contender, over the N scenarios of a family (`sweep.json`):
- `best_share`: the share of scenarios where it is the clear best on work lost: clearly below
  every other contender, paired; a scenario without one counts for nobody;
- `work_lost_vs_requests` and `stall_vs_requests`: its mean over the seeds divided by plain
  kube-scheduler's (`requests`) in the same scenario, with one unit added to both sides (1
  core-second, 1 node-second) so a scenario where neither loses anything reads 1.0 rather than
  0/0; the median (p50) and the 90th percentile (p90) over scenarios: below 1 is better;
- `best_or_tied_share.{work_lost,stall}`: the share of scenarios where it is not clearly worse
  than the row with the lowest mean;
- `undominated_share`: the share of scenarios where no row of another source (`source_of`) is
  clearly better on work lost or on stall while no worse on the other (mean difference at most
  0): each figure alone rewards a trade (pods left pending stall nothing, a restart that ends a
  stall loses work), and this one counts only better trades;
- `worse_than_requests.scenarios`: scenarios where its work lost is clearly above requests';
  `worse_than_requests.by_cause` says why, each scenario once, in this order (`why_worse`):
  `deschedule_rule`, the core-seconds its evictions for a policy's deschedule rule displaced
  (`work_lost.displaced_by_rule`: from each eviction until the pod ran again; its mean less
  requests') cover its extra work lost: the loss is the rule obeyed, which requests (no
  descheduler) ignores; `rule_withheld`, the same with the free cores of the nodes violating a
  rule while demand went unserved elsewhere (`work_lost.withheld_by_rule`, its mean less
  requests') added: the loss is where the rule kept pods off (not excused by the goal, which
  allows only the first; said so a reader knows where to look); `restarts_for_stall`, no more
  work lost to overload than requests' (not clearly above) and clearly less stall, at least
  one node-second of stall saved per extra core-second lost: the extra work lost is the
  restarts that bought it; `other`: none of these, a worse placement or a move that bought
  nothing, the ones to read first;
- `max_evictions_per_pod_hour`: the 95th percentile (`p95`) and the maximum (`max`) over every
  run (scenario x seed) of the most evictions of one pod in an hour: the churn a user meets;
- `violating_placements`: `total` summed over every run, and `none_share`, the share of
  scenarios where no seed placed a pod on a node violating its policy; `unavoidable` (of the
  total) and `none_avoidable_share` the same for the placements some fitting node was fine
  for (`tas_simulator.figures`: where every node violated, placing the pod at all is violating);
- `herd_ratio_by_load`: over every run with a burst of arrivals (`runs` of them), the median
  (`p50`), 95th percentile (`p95`) and maximum (`max`) of the most pods of the burst on one node
  over the load-balanced fair share (`tas_simulator.fair_share`);
- `share_of_gain.{work_lost,stall}`: its share of the achievable gain, (requests - it) /
  (requests - limit) on the means over the seeds, over the scenarios where requests is not
  already at the limit: the median (p50) and the worst tenth (p10); `scenarios` counts them;
- `share_of_gain_hindsight.{work_lost,stall}`: the same against the hindsight placement
  (`tas_simulator.hindsight`, achievable with no moves), over every scenario where requests' mean
  is at least 1 unit above the hindsight's (`seeds.something_to_gain`): the `median`, the
  worst tenth (`p10`), and `scenarios`;
- `population`: the family-level figures the goals judge (`tas_simulator.goals`), each
  `{estimate, low, high, scenarios}` with a 95% percentile-bootstrap interval over the
  scenarios (`tas_simulator.stats.bootstrap`, seeded: the same runs give the same bytes):
  `work_lost_vs_requests` and `stall_vs_requests`, the geometric mean of the ratios above;
  `share_of_gain_hindsight` and `share_of_gain_limit`, the median share of the work-lost gain,
  each share clamped to -100%..100% first (`seeds.clamped_share`: a scenario with a small gain
  to make weighs no more than any other); `undominated`, the share above;
- `source`: its source (`tas_simulator.contenders.sources`: one source's rows are its documented
  settings) judged at its best: `undominated`, the share of scenarios where any of its rows is
  undominated, with its interval; `lead`, that share less the highest other source's, with its
  bootstrap interval (scenarios resampled together) and the source `next`.

The top level names the `family`, its `family_seed` (`tas sweep --family-seed` draws afresh) and
the `seeds` per scenario; and `carried_over`, only when some runs were carried over from an earlier
sweep (`tas sweep --carry-over`, `tas_simulator.carry_over`): the folders `from`, and the `runs` of
each row carried (0: the row ran in full at this code). `references` holds the reference rows
(`tas_simulator.jobs.REFERENCES`, never contenders, never "best"): `limit` and `hindsight` with
their `*_vs_requests` ratios (and their `population` geometric means: the limit's is a bound no
scheduler goes below); `clairvoyant` (ours' code reading true values) with every figure above,
judged as if it ran in ours' place among the same contenders: what ours' decisions reach fed true
values, which is not a bound (it can do worse than ours).

The drawn scenarios are saved in `DIR/scenarios/` and every run's figures in `DIR/runs.json`,
so any row can be replayed with `tas simulate DIR/scenarios/<name>.yaml --seeds K`.
Same family, count, seeds and contenders give byte-identical files, however the runs are spread.
"""

from __future__ import annotations

import enum
import json
import logging
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tas_simulator.carry_over import carry_over, read_earlier_sweep
from tas_simulator.contenders import sources
from tas_simulator.family import Family, draw_scenario
from tas_simulator.figures import percentile
from tas_simulator.jobs import (
    CLAIRVOYANT,
    CLAIRVOYANT_OF,
    HINDSIGHT,
    LIMIT,
    REFERENCES,
    Job,
    JobResult,
    Progress,
    run_jobs,
)
from tas_simulator.journal import JOURNAL_FILE, Journal
from tas_simulator.report import rounded
from tas_simulator.scenario import Scenario, read_scenario
from tas_simulator.seeds import (
    BASELINE as BASELINE,
)
from tas_simulator.seeds import (
    GAIN_FIGURES,
    HEADLINE,
    SeededFigures,
    clamped_share,
    paired_best,
    seeds_for,
    share_of_gain,
    something_to_gain,
)
from tas_simulator.stats import (
    Interval,
    Statistic,
    bootstrap,
    bootstrap_lead,
    clearly_above_zero,
    clearly_below_zero,
    numeric_leaves,
)

log = logging.getLogger(__name__)

#: Every run of the sweep, written as it finishes (`tas_simulator.journal`).
JOURNAL = JOURNAL_FILE

#: The loop's two ratio goals against requests (issue 54): work lost at most this much of
#: requests' ...
LOST_GOAL = 0.85
#: ... while stalling at most this much of requests' stall.
STALL_GOAL = 1.0


def both_goals_within_reach(
    requests_lost: float, requests_stall: float, limit_lost: float, limit_stall: float
) -> bool:
    """Whether any scheduler could meet both ratio goals on one scenario, by the fluid limit's
    bounds (`tas_simulator.limit`): no placement loses less work than the limit, nor less stall
    and work together (node-seconds + core-seconds). A scheduler at both goals' edges, in the
    ratios' terms (1 added to each side), loses LOST_GOAL x (requests' + 1) - 1 core-seconds
    and stalls STALL_GOAL x (requests' + 1) - 1 node-seconds; where even that is below the
    limit, no scheduler meets both here (it may meet either alone: stall falls as more work is
    lost)."""
    lost = LOST_GOAL * (requests_lost + 1.0) - 1.0
    stall = STALL_GOAL * (requests_stall + 1.0) - 1.0
    return lost >= limit_lost and lost + stall >= limit_lost + limit_stall


@dataclass(frozen=True)
class SweepPlan:
    family: Family
    count: int
    seeds: int
    contenders: tuple[str, ...]


def draw_scenarios(family: Family, count: int, out: Path) -> list[Scenario]:
    """Draw, save and read back the family's first `count` scenarios: what runs is exactly
    what was saved."""
    folder = out / "scenarios"
    folder.mkdir(parents=True, exist_ok=True)
    scenarios = []
    base = Path(family.source).parent if family.source else Path(".")
    for index in range(count):
        document = draw_scenario(family, index)
        path = folder / f"{document['name']}.yaml"
        path.write_text(
            f"# Drawn from {family.source or family.name}, scenario {index}.\n"
            + yaml.safe_dump(document, sort_keys=False),
            encoding="utf-8",
        )
        scenarios.append(read_scenario(document, source=str(path), base=base))
    return scenarios


def plan_jobs(
    scenarios: Sequence[Scenario],
    contenders: Sequence[str],
    seeds: int,
    *,
    references: bool = True,
) -> list[Job]:
    """Every scenario x seed x contender, and the reference rows on the same seeds."""
    rows = [*contenders, *(REFERENCES if references else ())]
    return [
        Job(scenario, row, seed)
        for scenario in scenarios
        for seed in seeds_for(scenario.seed, seeds)
        for row in rows
    ]


def run_sweep(
    plan: SweepPlan,
    out: Path,
    *,
    workers: int | None = None,
    dask_address: str | None = None,
    progress: Progress | None = None,
    fresh: bool = False,
    carry_over_from: Path | None = None,
) -> dict[str, Any]:
    """Run the plan's sweep into `out`, reusing the runs its journal (`tas_simulator.journal`)
    holds from an earlier, interrupted sweep of the same code, unless `fresh`; and, given
    `carry_over_from`, the runs of that earlier sweep's rows this code reproduces
    (`tas_simulator.carry_over`; `CarryOverError` if it is not a sweep's folder)."""
    out.mkdir(parents=True, exist_ok=True)
    scenarios = draw_scenarios(plan.family, plan.count, out)
    jobs = plan_jobs(scenarios, plan.contenders, plan.seeds)
    if fresh:
        (out / JOURNAL).unlink(missing_ok=True)
    journal = Journal(out / JOURNAL)
    # Read before anything runs, so a wrong folder fails at once, not after the hours.
    earlier = read_earlier_sweep(carry_over_from, scenarios) if carry_over_from else None

    def run(batch: Sequence[Job], progress: Progress | None = None) -> list[JobResult]:
        found = [journal.known(job) for job in batch]
        missing = [job for job, result in zip(batch, found, strict=True) if result is None]
        if len(missing) < len(batch):
            log.warning(
                "%s: %d of %d runs finished before (same code, scenario, contender and seed), "
                "reused",
                out / JOURNAL,
                len(batch) - len(missing),
                len(batch),
            )
        ran = iter(
            run_jobs(
                missing,
                workers=workers,
                dask_address=dask_address,
                log_path=out / "sweep.log",
                progress=progress,
                record=journal.record,
            )
        )
        return [result if result is not None else next(ran) for result in found]

    if earlier is not None:
        carry_over(jobs, earlier, journal, lambda batch: run(batch, progress))
    results = run(jobs, progress)
    verdict = {
        "family": plan.family.name,
        "family_seed": plan.family.seed,
        "seeds": plan.seeds,
        **summarize(results, plan.contenders, len(scenarios)),
        **carried_over(jobs, journal),
    }
    _write_json(out / "sweep.json", verdict)
    _write_json(out / "runs.json", runs_document(results))
    return verdict


def carried_over(jobs: Sequence[Job], journal: Journal) -> dict[str, Any]:
    """`carried_over`, when some of the runs were (`tas_simulator.carry_over`): where from, and
    how many runs of each row (a row at 0 ran in full at this code)."""
    runs = dict.fromkeys(dict.fromkeys(job.contender for job in jobs), 0)
    sources = set()
    for job in jobs:  # one key digest per job: a record's sweep has 19,200
        if source := journal.carried_from(job):
            sources.add(source)
            runs[job.contender] += 1
    if not sources:
        return {}
    return {"carried_over": {"from": sorted(sources), "runs": runs}}


def _write_json(path: Path, document: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(rounded(document), indent=2, sort_keys=True) + "\n", "utf-8")


def runs_document(results: Sequence[JobResult]) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    for result in results:
        entry = runs.setdefault(result.scenario, {}).setdefault(result.contender, {})
        entry[str(result.seed)] = (
            result.figures if result.figures is not None else {"unavailable": result.unavailable}
        )
    return {"runs": runs}


def by_scenario(results: Sequence[JobResult]) -> dict[str, dict[str, SeededFigures]]:
    grouped: dict[str, dict[str, SeededFigures]] = {}
    for result in results:
        if result.figures is None:
            continue
        contenders = grouped.setdefault(result.scenario, {})
        seeded = contenders.setdefault(result.contender, SeededFigures(result.contender))
        seeded.by_seed[result.seed] = result.figures
    return grouped


class _Tally:
    """What one contender gathers over a sweep, scenario by scenario and run by run."""

    def __init__(self) -> None:
        self.clear_wins = 0
        self.best_or_tied = {"work_lost": 0, "stall": 0}
        self.worse_than_requests = 0
        self.worse_by_cause = dict.fromkeys(WorseCause, 0)
        self.ratios: dict[str, list[float]] = {"work_lost": [], "stall": []}
        self.churn: list[float] = []
        #: Each run with a burst: its herd ratio against the load-balanced fair share.
        self.herd: list[float] = []
        self.violating = 0.0
        self.unavoidable = 0.0
        self.clean_scenarios = 0
        self.avoidably_clean_scenarios = 0
        #: Per scenario judged, 1.0 where no row of another source dominates this row.
        self.undominated: list[float] = []
        #: Per scenario judged, 1.0 where some row of this row's source is undominated.
        self.source_undominated: list[float] = []
        #: Per scenario judged, the same for every other source (its rows' best).
        self.others_undominated: dict[str, list[float]] = {}
        self.gains: dict[str, list[float]] = {"work_lost": [], "stall": []}
        self.gains_hindsight: dict[str, list[float]] = {"work_lost": [], "stall": []}
        #: The limit's: the scenarios judged by `both_goals_within_reach`, and those out of it.
        self.reach_judged = 0
        self.out_of_reach: list[str] = []


#: The sweep's figures by dotted path in a run's figures.
_JUDGED = (("work_lost", HEADLINE), ("stall", "stall"))


def source_of(rows: Sequence[str]) -> dict[str, str]:
    """Each row's source (`tas_simulator.contenders.sources`): the rows of one source are its
    documented settings, and never dominate one another. A row no contender names (a test's)
    is its own source; the clairvoyant is ours' (it runs in ours' place)."""
    found = {row: source for source, names in sources(rows).items() for row in names}
    found = {row: found.get(row, row) for row in rows}
    if CLAIRVOYANT in found and CLAIRVOYANT_OF in rows:
        found[CLAIRVOYANT] = found.get(CLAIRVOYANT_OF, CLAIRVOYANT_OF)
    return found


def summarize(
    results: Sequence[JobResult], contenders: Sequence[str], scenario_count: int
) -> dict[str, Any]:
    tallies = {c: _Tally() for c in contenders}
    references = {r: _Tally() for r in REFERENCES}
    # The clairvoyant runs like a contender (it places, evicts and moves pods), so it is
    # tallied like one; the limit is a bound on two figures, not a run of pods.
    run_like = {**tallies, CLAIRVOYANT: references[CLAIRVOYANT]}
    for result in results:
        if result.figures is not None and result.contender in run_like:
            leaves = numeric_leaves(result.figures)
            tally = run_like[result.contender]
            tally.churn.append(leaves.get("evictions.max_per_pod_hour", 0.0))
            tally.violating += leaves.get("violating_placements", 0.0)
            tally.unavoidable += leaves.get("unavoidable_placements", 0.0)
            if "herd_ratio_by_load" in leaves:
                tally.herd.append(leaves["herd_ratio_by_load"])
    sourced = source_of([*contenders, CLAIRVOYANT])
    grouped = by_scenario(results)
    for name in sorted(grouped):
        rows = grouped[name]
        _tally_scenario({c: s for c, s in rows.items() if c in tallies}, tallies, sourced)
        _tally_in_ours_place(rows, tallies, references[CLAIRVOYANT], sourced)
        _tally_references(name, rows, tallies, references)
    share = (lambda n: n / scenario_count) if scenario_count else (lambda n: 0.0)
    verdict = {
        contender: _verdict_of(tally, share, sourced[contender])
        for contender, tally in tallies.items()
    }
    found: dict[str, Any] = {}
    for reference, tally in references.items():
        if reference in (LIMIT, HINDSIGHT):
            found[reference] = {
                "work_lost_vs_requests": _quantiles(tally.ratios["work_lost"]),
                "stall_vs_requests": _quantiles(tally.ratios["stall"]),
                "population": {
                    f"{key}_vs_requests": _estimate(tally.ratios[key], Statistic.GEOMETRIC_MEAN)
                    for key in ("work_lost", "stall")
                },
            }
            if reference == LIMIT:
                found[reference]["both_goals_out_of_reach"] = {
                    "scenarios": sorted(tally.out_of_reach),
                    "of": tally.reach_judged,
                }
        else:
            found[reference] = _verdict_of(tally, share, sourced[CLAIRVOYANT])
    return {"scenarios": scenario_count, "contenders": verdict, "references": found}


def _estimate(values: Sequence[float], statistic: Statistic) -> dict[str, Any] | None:
    """A population figure over the scenarios: the statistic and its 95% bootstrap interval
    (`tas_simulator.stats.bootstrap`), and how many scenarios it is over; None over none."""
    if statistic is Statistic.GEOMETRIC_MEAN:
        values = [v for v in values if v > 0]
    if not values:
        return None
    found = bootstrap(values, statistic)
    return {"estimate": found.mean, "low": found.low, "high": found.high, "scenarios": found.n}


def _lead(mine: Sequence[float], others: Mapping[str, Sequence[float]]) -> dict[str, Any] | None:
    """This source's undominated share less the highest other source's, with its 95%
    bootstrap interval (scenarios resampled together), and which source is next."""
    if not mine or not others:
        return None
    best = max(sorted(others), key=lambda s: statistics.fmean(others[s]))
    found = bootstrap_lead(mine, [others[s] for s in sorted(others)])
    return {"estimate": found.mean, "low": found.low, "high": found.high, "next": best}


def _verdict_of(tally: _Tally, share: Callable[[int], float], source: str) -> dict[str, Any]:
    return {
        "best_share": share(tally.clear_wins),
        "best_or_tied_share": {k: share(v) for k, v in tally.best_or_tied.items()},
        "undominated_share": share(int(sum(tally.undominated))),
        "work_lost_vs_requests": _quantiles(tally.ratios["work_lost"]),
        "stall_vs_requests": _quantiles(tally.ratios["stall"]),
        "worse_than_requests": {
            "scenarios": tally.worse_than_requests,
            "by_cause": {str(cause): n for cause, n in tally.worse_by_cause.items()},
        },
        "max_evictions_per_pod_hour": {
            "p95": percentile(tally.churn, 95),
            "max": max(tally.churn, default=0.0),
        },
        "violating_placements": {
            "total": int(tally.violating),
            "none_share": share(tally.clean_scenarios),
            "unavoidable": int(tally.unavoidable),
            "none_avoidable_share": share(tally.avoidably_clean_scenarios),
        },
        "share_of_gain": _gains(tally.gains),
        # Over the scenarios with anything to gain (`something_to_gain`).
        "share_of_gain_hindsight": _gains(tally.gains_hindsight, middle="median"),
        "herd_ratio_by_load": {
            "p50": percentile(tally.herd, 50) if tally.herd else None,
            "p95": percentile(tally.herd, 95) if tally.herd else None,
            "max": max(tally.herd, default=None),
            "runs": len(tally.herd),
        },
        # The family-level goals' figures, each with a 95% bootstrap interval over scenarios.
        "population": {
            "work_lost_vs_requests": _estimate(tally.ratios["work_lost"], Statistic.GEOMETRIC_MEAN),
            "stall_vs_requests": _estimate(tally.ratios["stall"], Statistic.GEOMETRIC_MEAN),
            "share_of_gain_hindsight": _estimate(
                [clamped_share(g) for g in tally.gains_hindsight["work_lost"]], Statistic.MEDIAN
            ),
            "share_of_gain_limit": _estimate(
                [clamped_share(g) for g in tally.gains["work_lost"]], Statistic.MEDIAN
            ),
            "undominated": _estimate(tally.undominated, Statistic.MEAN),
        },
        "source": {
            "name": source,
            "undominated": _estimate(tally.source_undominated, Statistic.MEAN),
            "lead": _lead(tally.source_undominated, tally.others_undominated),
        },
    }


def _tally_in_ours_place(
    rows: Mapping[str, SeededFigures],
    tallies: Mapping[str, _Tally],
    clairvoyant: _Tally,
    sourced: Mapping[str, str],
) -> None:
    """The clairvoyant judged as if it ran instead of ours, against the same contenders: what
    ours' decisions reach fed true values. It is not a bound: other decisions may do better,
    and it can do worse than ours (`tas_simulator.goals` shows it as what it is)."""
    if CLAIRVOYANT not in rows:
        return
    others = {c: s for c, s in rows.items() if c in tallies and c != CLAIRVOYANT_OF}
    # The other contenders' tallies are throwaway: they were counted once already.
    _tally_scenario(
        {**others, CLAIRVOYANT: rows[CLAIRVOYANT]},
        {**{c: _Tally() for c in others}, CLAIRVOYANT: clairvoyant},
        sourced,
    )


def _tally_references(
    name: str,
    rows: Mapping[str, SeededFigures],
    tallies: Mapping[str, _Tally],
    references: Mapping[str, _Tally],
) -> None:
    """The ratios of the reference rows against requests, every row's share of the
    achievable gain (none where requests is already at the limit), and whether both ratio
    goals are within any scheduler's reach on this scenario (`both_goals_within_reach`)."""
    means = {row: s.intervals() for row, s in rows.items()}
    baseline, limit = means.get(BASELINE, {}), means.get(LIMIT, {})
    hindsight = means.get(HINDSIGHT, {})
    lost, stall = GAIN_FIGURES["work_lost"], GAIN_FIGURES["stall"]
    if LIMIT in references and all(p in d for p in (lost, stall) for d in (baseline, limit)):
        references[LIMIT].reach_judged += 1
        if not both_goals_within_reach(
            baseline[lost].mean, baseline[stall].mean, limit[lost].mean, limit[stall].mean
        ):
            references[LIMIT].out_of_reach.append(name)
    for row, found in means.items():
        tally = tallies.get(row) or references.get(row)
        if tally is None:
            continue
        for key, path in GAIN_FIGURES.items():
            if path not in found or path not in baseline:
                continue
            if row in (LIMIT, HINDSIGHT):
                # The clairvoyant's ratios come with its place among the contenders.
                ratio = (found[path].mean + 1.0) / (baseline[path].mean + 1.0)
                tally.ratios[key].append(ratio)
                continue
            if path in limit:
                gain = share_of_gain(baseline[path].mean, found[path].mean, limit[path].mean)
                if gain is not None:
                    tally.gains[key].append(gain)
            if path in hindsight and something_to_gain(baseline[path].mean, hindsight[path].mean):
                gain = share_of_gain(baseline[path].mean, found[path].mean, hindsight[path].mean)
                if gain is not None:
                    tally.gains_hindsight[key].append(gain)


def _gains(gains: Mapping[str, list[float]], *, middle: str = "p50") -> dict[str, Any]:
    """Each figure's share of the gain over the scenarios counted for it: the median (under
    `middle`: the hindsight goal reads `median`), p10 and how many scenarios there were."""
    return {
        key: {
            middle: percentile(values, 50) if values else None,
            "p10": percentile(values, 10) if values else None,
            "scenarios": len(values),
        }
        for key, values in gains.items()
    }


def _tally_scenario(
    seeded: Mapping[str, SeededFigures],
    tallies: Mapping[str, _Tally],
    sourced: Mapping[str, str],
) -> None:
    """One scenario's rows into each contender's tally, every comparison paired by seed."""
    for key, path in _JUDGED:
        present = {c: s for c, s in seeded.items() if path in s.per_seed()}
        if key == "work_lost":
            winner = paired_best(present, path)
            if winner is not None:
                tallies[winner].clear_wins += 1
        if present:
            leader = min(present, key=lambda c: (present[c].intervals()[path].mean, c))
            for contender, found in present.items():
                difference = found.paired_with(present[leader], path)
                if difference is None or not clearly_above_zero(difference):
                    tallies[contender].best_or_tied[key] += 1
    undominated = {
        contender
        for contender, found in seeded.items()
        if not any(
            _dominates(other, found)
            for c, other in seeded.items()
            if sourced.get(c, c) != sourced.get(contender, contender)
        )
    }
    by_source: dict[str, float] = {}
    for contender in seeded:
        source = sourced.get(contender, contender)
        by_source[source] = max(by_source.get(source, 0.0), float(contender in undominated))
    baseline = seeded.get(BASELINE)
    for contender, found in seeded.items():
        tally = tallies[contender]
        ivs = found.intervals()
        source = sourced.get(contender, contender)
        tally.undominated.append(float(contender in undominated))
        tally.source_undominated.append(by_source[source])
        # Every source the sweep runs, present here or not (a source with no run here is
        # undominated nowhere), so each list has one value per scenario this row was judged in.
        for other in sorted({sourced.get(c, c) for c in tallies} - {source}):
            tally.others_undominated.setdefault(other, []).append(by_source.get(other, 0.0))
        if ivs.get("violating_placements", _ZERO).high == 0:
            tally.clean_scenarios += 1
        if all(_avoidable(figures) == 0 for figures in found.by_seed.values()):
            tally.avoidably_clean_scenarios += 1
        if baseline is None:
            continue
        base = baseline.intervals()
        for key, path in _JUDGED:
            if path in ivs and path in base:
                tally.ratios[key].append((ivs[path].mean + 1.0) / (base[path].mean + 1.0))
        if contender != BASELINE and worse_than(found, baseline):
            tally.worse_than_requests += 1
            tally.worse_by_cause[why_worse(found, baseline)] += 1


def worse_than(found: SeededFigures, requests: SeededFigures) -> bool:
    """`found` loses clearly more work than requests: the interval of its per-seed
    differences on work lost lies wholly above 0 (`tas_simulator.stats.clearly_above_zero`)."""
    difference = found.paired_with(requests, HEADLINE)
    return difference is not None and clearly_above_zero(difference)


class WorseCause(enum.StrEnum):
    """Why a contender lost more work than requests in a scenario (`why_worse`), in the order
    they are judged."""

    DESCHEDULE_RULE = "deschedule_rule"
    RULE_WITHHELD = "rule_withheld"
    RESTARTS_FOR_STALL = "restarts_for_stall"
    OTHER = "other"


def why_worse(found: SeededFigures, requests: SeededFigures) -> WorseCause:
    """Why a contender's work lost lies clearly beyond requests' in one scenario (module
    docstring), every difference paired by seed.

    The goal stays judged on work lost alone; this says which of the losses are a policy
    obeyed, which a trade the stall figure shows, and which are plain harm."""
    extra = _mean_difference(found, requests, HEADLINE)
    paid = _mean_difference(found, requests, "work_lost.displaced_by_rule")
    # What the rule's evictions displaced covers all the extra loss: the rule obeyed, which
    # requests (no descheduler) ignores. Nothing else excuses a loss.
    if 0 < extra <= paid:
        return WorseCause.DESCHEDULE_RULE
    # Said, not excused: the rule's nodes sat with free cores while demand went unserved
    # elsewhere (`work_lost.withheld_by_rule`, more than requests', which fills them), and that
    # with the rule's evictions covers the extra loss.
    withheld = _mean_difference(found, requests, "work_lost.withheld_by_rule")
    if withheld > 0 and extra <= paid + withheld:
        return WorseCause.RULE_WITHHELD
    overload = found.paired_with(requests, "work_lost.stalled")
    stall = found.paired_with(requests, "stall")
    if (
        overload is not None
        and stall is not None
        and not clearly_above_zero(overload)
        and clearly_below_zero(stall)
        # At least a node-second of stall saved for each core-second lost: the rate at which
        # LoadAware's moves are judged (stalled cores against the restart's cores).
        and -stall.mean >= extra
    ):
        return WorseCause.RESTARTS_FOR_STALL
    return WorseCause.OTHER


def _mean_difference(found: SeededFigures, requests: SeededFigures, path: str) -> float:
    """The mean over the seeds of `found`'s figure less requests' (a figure a run does not
    report, such as work displaced by a rule where none was obeyed, counts 0)."""
    mine, theirs = found.intervals().get(path, _ZERO), requests.intervals().get(path, _ZERO)
    return mine.mean - theirs.mean


_ZERO = Interval(0.0, 0.0, 0.0, 1)


def _avoidable(figures: Mapping[str, Any]) -> float:
    """Violating placements a scheduler could have avoided: some fitting node was fine."""
    return float(figures.get("violating_placements", 0)) - float(
        figures.get("unavoidable_placements", 0)
    )


def _dominates(one: SeededFigures, other: SeededFigures) -> bool:
    """`one` is clearly better than `other` on work lost or on stall (the interval of the
    per-seed differences wholly below 0) and no worse on the other figure (the mean
    difference at most 0): a better trade, not another one. Less stall bought with more lost
    work (pods left pending stall nothing) does not dominate."""
    differences = [one.paired_with(other, path) for _, path in _JUDGED]
    if any(d is None for d in differences):
        return False
    found = [d for d in differences if d is not None]
    return any(clearly_below_zero(d) for d in found) and all(d.mean <= 0 for d in found)


def _quantiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None}
    return {"p50": percentile(values, 50), "p90": percentile(values, 90)}


def table(verdict: Mapping[str, Any]) -> str:
    """The sweep's verdict as a terminal table."""
    header = (
        "contender",
        "best",
        "undominated",
        "lost gmean (95%)",
        "lost p50",
        "lost p90",
        "stall p50",
        "stall p90",
        "churn p95",
        "viol.place (unavoid.)",
        "herd p95",
        "gain lost p50",
        "gain stall p50",
        "gain lost vs hs",
    )
    rows = [header]
    for contender, v in verdict["contenders"].items():
        rows.append(
            (
                contender,
                f"{v['best_share']:.0%}",
                _share(v.get("undominated_share")),
                _gmean(v),
                _ratio(v["work_lost_vs_requests"]["p50"]),
                _ratio(v["work_lost_vs_requests"]["p90"]),
                _ratio(v["stall_vs_requests"]["p50"]),
                _ratio(v["stall_vs_requests"]["p90"]),
                f"{v['max_evictions_per_pod_hour']['p95']:.0f}",
                _placements(v["violating_placements"]),
                _herd(v["herd_ratio_by_load"]),
                _share(v["share_of_gain"]["work_lost"]["p50"]),
                _share(v["share_of_gain"]["stall"]["p50"]),
                _share(v["share_of_gain_hindsight"]["work_lost"]["median"]),
            )
        )
    for reference, v in verdict.get("references", {}).items():
        gains = v.get("share_of_gain")
        rows.append(
            (
                f"{reference} (ref)",
                "-",
                _share(v.get("undominated_share")),
                _gmean(v),
                _ratio(v["work_lost_vs_requests"]["p50"]),
                _ratio(v["work_lost_vs_requests"]["p90"]),
                _ratio(v["stall_vs_requests"]["p50"]),
                _ratio(v["stall_vs_requests"]["p90"]),
                f"{churn['p95']:.0f}" if (churn := v.get("max_evictions_per_pod_hour")) else "-",
                _placements(placed) if (placed := v.get("violating_placements")) else "-",
                _herd(herd) if (herd := v.get("herd_ratio_by_load")) else "-",
                _share(gains["work_lost"]["p50"]) if gains else "100%",
                _share(gains["stall"]["p50"]) if gains else "100%",
                _share(h["work_lost"]["median"])
                if (h := v.get("share_of_gain_hindsight"))
                else ("100%" if reference == HINDSIGHT else "-"),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return (
        f"{verdict['scenarios']} scenarios; ratios against requests (below 1 is better)\n"
        + "\n".join(lines)
        + "\n(ref): references, not contenders: limit = the fluid bound, hindsight = whole pods "
        "placed once knowing the future (achievable, no moves), clairvoyant = ours reading "
        "true values, judged in ours' place (not a bound); unavoid.: placed where every fitting "
        "node violated; herd p95: the most pods of a burst on one node over the load-balanced "
        "fair share, 95th percentile over the runs with a burst; undominated: share of "
        "scenarios where no row of another source is clearly better (paired by seed) on work "
        "lost or stall and no worse on the other; lost gmean: geometric mean over scenarios of "
        "the work-lost ratio, with its 95% bootstrap interval; gain: share of the achievable "
        "gain, (requests - row) / (requests - limit), median over the scenarios with any gain to "
        "make; gain lost vs hs: the same on work lost against hindsight, over the scenarios where "
        "requests loses at least a core-second more"
    )


def _gmean(row: Mapping[str, Any]) -> str:
    """The geometric-mean work-lost ratio and its interval, or "-" (an older sweep.json)."""
    found = (row.get("population") or {}).get("work_lost_vs_requests")
    if not found:
        return "-"
    return f"{found['estimate']:.2f}x ({found['low']:.2f}-{found['high']:.2f})"


def _placements(placed: Mapping[str, Any]) -> str:
    unavoidable = placed.get("unavoidable")
    return f"{placed['total']}" + ("" if unavoidable is None else f" ({unavoidable})")


def _herd(herd: Mapping[str, Any]) -> str:
    p95 = herd.get("p95")
    return "-" if p95 is None else f"{p95:.2f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"
