"""`tas sweep`: many drawn scenarios, every contender, several seeds, one verdict per contender.

Per contender, over the N scenarios of a family (`sweep.json`):
- `best_share`: the share of scenarios where it is the clear best on work lost: its 95%
  interval over the seeds lies wholly below every other contender's (`simulator.stats`); a
  scenario where the best intervals overlap counts for nobody;
- `work_lost_vs_requests` and `stall_vs_requests`: its mean over the seeds divided by plain
  kube-scheduler's (`requests`) in the same scenario, with one unit added to both sides (1
  core-second, 1 node-second) so a scenario where neither loses anything reads 1.0 rather than
  0/0; the median (p50) and the 90th percentile (p90) over scenarios: below 1 is better;
- `best_or_tied_share.{work_lost,stall}`: the share of scenarios where it has the lowest mean
  or an interval that overlaps the lowest mean's: not shown worse than the best;
- `undominated_share`: the share of scenarios where no other contender is clearly better on
  work lost or on stall (interval wholly below) while no worse on the other (mean): each
  figure alone rewards a trade (pods left pending stall nothing, a restart that ends a stall
  loses work), and this one counts only better trades;
- `worse_than_requests.scenarios`: scenarios where its work lost interval lies wholly above
  requests': worse beyond doubt; `worse_than_requests.by_cause` says why, each scenario once, in
  this order (`why_worse`): `deschedule_rule`, the core-seconds its evictions for a policy's
  deschedule rule displaced (`work_lost.displaced_by_rule`: from each eviction until the pod
  ran again) account for its work lost beyond requests' (means over the seeds): the loss is
  the rule obeyed, which requests (no descheduler) ignores; or, for ours, the sweep's run of
  ours with the scenario's deschedule strategies taken out (`ours-no-deschedule`, run only
  where ours is worse) is not worse than requests: obeying the rules cost more than the
  restarts (a node kept off limits by its label, its pods crowded onto the others);
  `restarts_for_stall`, no more work lost to overload than requests' (the stalled part within
  requests' interval) and clearly less stall (its interval wholly below, and at least one
  node-second of stall saved per extra core-second lost): the extra work lost is the restarts
  that bought it; `other`: neither, a worse placement or a move that bought
  nothing, the ones to read first;
- `max_evictions_per_pod_hour`: the 95th percentile (`p95`) and the maximum (`max`) over every
  run (scenario x seed) of the most evictions of one pod in an hour: the churn a user meets;
- `violating_placements`: `total` summed over every run, and `none_share`, the share of
  scenarios where no seed placed a pod on a node violating its policy; `unavoidable` (of the
  total) and `none_avoidable_share` the same for the placements some fitting node was fine
  for (`simulator.figures`: where every node violated, placing the pod at all is violating);
- `herd_ratio_by_load`: over every run with a burst of arrivals (`runs` of them), the median
  (`p50`), 95th percentile (`p95`) and maximum (`max`) of the most pods of the burst on one node
  over the load-balanced fair share (`simulator.fair_share`);
- `share_of_gain.{work_lost,stall}`: its share of the achievable gain, (requests - it) /
  (requests - limit) on the means over the seeds, over the scenarios where requests is not
  already at the limit: the median (p50) and the worst tenth (p10); `scenarios` counts them;
- `share_of_gain_hindsight.{work_lost,stall}`: the same against the hindsight placement
  (`simulator.hindsight`, achievable with no moves), over the scenarios with anything to gain:
  requests' mean at least 1 unit above the hindsight's and its 95% interval wholly above
  (`seeds.something_to_gain`): the `median`, the worst tenth (`p10`), and `scenarios`.

`references` holds the reference rows (`simulator.jobs.REFERENCES`, never contenders, never
"best"): `limit` and `hindsight` with their `*_vs_requests` ratios; `clairvoyant` (ours'
code reading true values) with every figure above, judged as if it ran in ours' place among
the same contenders: what ours' decisions reach with perfect information, the bound the
metrics' lag leaves them.

The drawn scenarios are saved in `DIR/scenarios/` and every run's figures in `DIR/runs.json`,
so any row can be replayed with `tas simulate DIR/scenarios/<name>.yaml --seeds K`.
Same family, count, seeds and contenders give byte-identical files, however the runs are spread.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from simulator.family import Family, draw_scenario
from simulator.figures import percentile
from simulator.jobs import (
    CLAIRVOYANT,
    CLAIRVOYANT_OF,
    HINDSIGHT,
    LIMIT,
    REFERENCES,
    UNRULED,
    Job,
    JobResult,
    Progress,
    run_jobs,
)
from simulator.journal import Journal
from simulator.report import rounded
from simulator.scenario import Scenario, read_scenario
from simulator.seeds import (
    BASELINE as BASELINE,
)
from simulator.seeds import (
    GAIN_FIGURES,
    HEADLINE,
    SeededFigures,
    seeds_for,
    share_of_gain,
    something_to_gain,
)
from simulator.stats import Interval, clear_best, numeric_leaves

log = logging.getLogger(__name__)

#: Every run of the sweep, written as it finishes (`simulator.journal`).
JOURNAL = "journal.jsonl"


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
) -> dict[str, Any]:
    """Run the plan's sweep into `out`, reusing the runs its journal (`simulator.journal`)
    holds from an earlier, interrupted sweep of the same code, unless `fresh`."""
    out.mkdir(parents=True, exist_ok=True)
    scenarios = draw_scenarios(plan.family, plan.count, out)
    jobs = plan_jobs(scenarios, plan.contenders, plan.seeds)
    if fresh:
        (out / JOURNAL).unlink(missing_ok=True)
    journal = Journal(out / JOURNAL)

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

    results = run(jobs, progress)
    # Where ours lost clearly more than requests with deschedule rules to obey, ours again
    # without them: whether obeying them is what cost it (`why_worse`).
    results += run(unruled_jobs(results, scenarios))
    verdict = summarize(results, plan.contenders, len(scenarios))
    _write_json(out / "sweep.json", verdict)
    _write_json(out / "runs.json", runs_document(results))
    return verdict


def unruled_jobs(results: Sequence[JobResult], scenarios: Sequence[Scenario]) -> list[Job]:
    """Ours without its policies' deschedule strategies (`UNRULED`), on the same seeds, for
    each scenario with such rules where ours' work lost lies wholly above requests'."""
    grouped = by_scenario(results)
    jobs = []
    for scenario in scenarios:
        rows = grouped.get(scenario.name, {})
        if not scenario.has_deschedule_rules or not {CLAIRVOYANT_OF, BASELINE} <= set(rows):
            continue
        ours, requests = (rows[c].intervals() for c in (CLAIRVOYANT_OF, BASELINE))
        worse = HEADLINE in ours and HEADLINE in requests
        if worse and ours[HEADLINE].low > requests[HEADLINE].high:
            jobs += [Job(scenario, UNRULED, seed) for seed in sorted(rows[CLAIRVOYANT_OF].by_seed)]
    return jobs


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
        self.undominated = 0
        self.gains: dict[str, list[float]] = {"work_lost": [], "stall": []}
        self.gains_hindsight: dict[str, list[float]] = {"work_lost": [], "stall": []}


#: The sweep's figures by dotted path in a run's figures.
_JUDGED = (("work_lost", HEADLINE), ("stall", "stall"))


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
    grouped = by_scenario(results)
    for name in sorted(grouped):
        rows = grouped[name]
        _tally_scenario(
            {c: s for c, s in rows.items() if c in tallies}, tallies, unruled=rows.get(UNRULED)
        )
        _tally_in_ours_place(rows, tallies, references[CLAIRVOYANT])
        _tally_references(rows, tallies, references)
    share = (lambda n: n / scenario_count) if scenario_count else (lambda n: 0.0)
    verdict = {contender: _verdict_of(tally, share) for contender, tally in tallies.items()}
    found: dict[str, Any] = {}
    for reference, tally in references.items():
        if reference in (LIMIT, HINDSIGHT):
            found[reference] = {
                "work_lost_vs_requests": _quantiles(tally.ratios["work_lost"]),
                "stall_vs_requests": _quantiles(tally.ratios["stall"]),
            }
        else:
            found[reference] = _verdict_of(tally, share)
    return {"scenarios": scenario_count, "contenders": verdict, "references": found}


def _verdict_of(tally: _Tally, share: Callable[[int], float]) -> dict[str, Any]:
    return {
        "best_share": share(tally.clear_wins),
        "best_or_tied_share": {k: share(v) for k, v in tally.best_or_tied.items()},
        "undominated_share": share(tally.undominated),
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
    }


def _tally_in_ours_place(
    rows: Mapping[str, SeededFigures], tallies: Mapping[str, _Tally], clairvoyant: _Tally
) -> None:
    """The clairvoyant judged as if it ran instead of ours, against the same contenders: what
    ours' decisions would reach with perfect information. A goal it misses too is bounded by
    the design (or the goal), not by the metrics' lag."""
    if CLAIRVOYANT not in rows:
        return
    others = {c: s for c, s in rows.items() if c in tallies and c != CLAIRVOYANT_OF}
    # The other contenders' tallies are throwaway: they were counted once already.
    _tally_scenario(
        {**others, CLAIRVOYANT: rows[CLAIRVOYANT]},
        {**{c: _Tally() for c in others}, CLAIRVOYANT: clairvoyant},
    )


def _tally_references(
    rows: Mapping[str, SeededFigures],
    tallies: Mapping[str, _Tally],
    references: Mapping[str, _Tally],
) -> None:
    """The ratios of the reference rows against requests, and every row's share of the
    achievable gain (none where requests is already at the limit)."""
    means = {row: s.intervals() for row, s in rows.items()}
    baseline, limit = means.get(BASELINE, {}), means.get(LIMIT, {})
    hindsight = means.get(HINDSIGHT, {})
    for row, found in means.items():
        tally = tallies.get(row) or references.get(row)
        if tally is None:
            continue
        for key, path in GAIN_FIGURES.items():
            if path not in found or path not in baseline:
                continue
            if row in (
                LIMIT,
                HINDSIGHT,
            ):  # the clairvoyant's come with its place among the contenders
                ratio = (found[path].mean + 1.0) / (baseline[path].mean + 1.0)
                tally.ratios[key].append(ratio)
                continue
            if path in limit:
                gain = share_of_gain(baseline[path].mean, found[path].mean, limit[path].mean)
                if gain is not None:
                    tally.gains[key].append(gain)
            if path in hindsight and something_to_gain(baseline[path], hindsight[path]):
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
    unruled: SeededFigures | None = None,
) -> None:
    """One scenario's rows into each contender's tally; `unruled`, ours' run without the
    deschedule rules where the sweep made one (`why_worse`)."""
    intervals = {c: s.intervals() for c, s in seeded.items()}
    without_rules = unruled.intervals() if unruled is not None else None
    for key, path in _JUDGED:
        present = {c: ivs[path] for c, ivs in intervals.items() if path in ivs}
        if key == "work_lost":
            winner = clear_best(present)
            if winner is not None:
                tallies[winner].clear_wins += 1
        if present:
            leader = min(present.values(), key=lambda i: i.mean)
            for contender, found in present.items():
                if found.overlaps(leader) or found.mean <= leader.mean:
                    tallies[contender].best_or_tied[key] += 1
    baseline = intervals.get(BASELINE, {})
    for contender, ivs in intervals.items():
        tally = tallies[contender]
        if not any(_dominates(other, ivs) for c, other in intervals.items() if c != contender):
            tally.undominated += 1
        if ivs.get("violating_placements", _ZERO).high == 0:
            tally.clean_scenarios += 1
        if all(_avoidable(figures) == 0 for figures in seeded[contender].by_seed.values()):
            tally.avoidably_clean_scenarios += 1
        for key, path in _JUDGED:
            if path in ivs and path in baseline:
                tally.ratios[key].append((ivs[path].mean + 1.0) / (baseline[path].mean + 1.0))
        if HEADLINE in ivs and HEADLINE in baseline and ivs[HEADLINE].low > baseline[HEADLINE].high:
            tally.worse_than_requests += 1
            cause = why_worse(
                ivs, baseline, unruled=without_rules if contender == CLAIRVOYANT_OF else None
            )
            tally.worse_by_cause[cause] += 1


class WorseCause(enum.StrEnum):
    """Why a contender lost more work than requests in a scenario (`why_worse`), in the order
    they are judged."""

    DESCHEDULE_RULE = "deschedule_rule"
    RESTARTS_FOR_STALL = "restarts_for_stall"
    OTHER = "other"


def why_worse(
    found: Mapping[str, Interval],
    requests: Mapping[str, Interval],
    *,
    unruled: Mapping[str, Interval] | None = None,
) -> WorseCause:
    """Why a contender's work lost lies beyond requests' in one scenario (module docstring).
    `unruled`: the same contender's run without its policies' deschedule strategies (ours
    only), where the sweep ran it.

    The goal stays judged on work lost alone; this says which of the losses are a policy
    obeyed or a trade the stall figure shows, and which are plain harm."""
    obeyed = "work_lost.displaced_by_rule"
    paid = found.get(obeyed, _ZERO).mean - requests.get(obeyed, _ZERO).mean
    if 0 < found[HEADLINE].mean - requests[HEADLINE].mean <= paid:
        return WorseCause.DESCHEDULE_RULE
    # Without the rules it would not have been worse: what obeying them cost is more than the
    # restarts (a node kept empty by its label, the pods crowded onto the others).
    if (
        unruled is not None
        and HEADLINE in unruled
        and unruled[HEADLINE].low <= requests[HEADLINE].high
    ):
        return WorseCause.DESCHEDULE_RULE
    overload, stall = "work_lost.stalled", "stall"
    if (
        all(path in found and path in requests for path in (overload, stall, HEADLINE))
        and found[overload].mean <= requests[overload].high
        and found[stall].high < requests[stall].low
        # At least a node-second of stall saved for each core-second lost: the rate at which
        # LoadAware's moves are judged (stalled cores against the restart's cores).
        and requests[stall].mean - found[stall].mean
        >= found[HEADLINE].mean - requests[HEADLINE].mean
    ):
        return WorseCause.RESTARTS_FOR_STALL
    return WorseCause.OTHER


_ZERO = Interval(0.0, 0.0, 0.0, 1)


def _avoidable(figures: Mapping[str, Any]) -> float:
    """Violating placements a scheduler could have avoided: some fitting node was fine."""
    return float(figures.get("violating_placements", 0)) - float(
        figures.get("unavoidable_placements", 0)
    )


def _dominates(one: Mapping[str, Interval], other: Mapping[str, Interval]) -> bool:
    """`one` is clearly better than `other` on work lost or on stall (its interval wholly
    below) and no worse on the other figure (its mean at most): a better trade, not another
    one. Less stall bought with more lost work (pods left pending stall nothing) does not
    dominate."""
    figures = [path for _, path in _JUDGED if path in one and path in other]
    if len(figures) < len(_JUDGED):
        return False
    clearly = any(one[p].high < other[p].low for p in figures)
    return clearly and all(one[p].mean <= other[p].mean for p in figures)


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
        "true values, judged in ours' place; unavoid.: placed where every fitting node "
        "violated; herd p95: the most pods of a burst on one node over the load-balanced fair "
        "share, 95th percentile over the runs with a burst; undominated: share of scenarios "
        "where no other contender is clearly better on work lost or stall and no worse on the "
        "other; gain: share of the achievable gain, (requests - row) / (requests - limit), median "
        "over the scenarios with any gain to make; gain lost vs hs: the same on work lost against "
        "hindsight, over the scenarios where requests loses more beyond the noise"
    )


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
