"""Results over many seeds and many generated scenarios (`tas simulate --seeds`, `tas sweep`).

Covered:
- a figure over seeds is a mean with a Student-t 95% interval; "best" needs an interval wholly
  below every other's, and overlapping intervals are a tie; a contender's seeds are aggregated
  once however many readers (means, intervals, bests), again only when a seed is added;
- the default family reads, every scenario it draws is a valid scenario, draws are the same
  whatever the count, and over 200 draws it covers every event kind, every usage shape, mixed
  node sizes and every policy set the named scenarios use;
- a bad family is refused with every problem listed; random documents never crash the reader;
- `tas simulate --seeds N` writes means, intervals, the seeds and the clear bests, and its
  table says which seeds; the reference rows (limit, clairvoyant) are in summary.json and
  the table, never judged best;
- `tas sweep` writes sweep.json in the documented shape, saves every drawn scenario so it can
  be replayed with `tas simulate`, and gives byte-identical files with one process, a process
  pool, and a local Dask cluster of worker processes.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from distributed import LocalCluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tas_simulator.seeds
from tas.durations import parse_duration as _seconds
from tas_cli.main import main
from tas_simulator.family import (
    EVENT_KINDS,
    FAMILIES,
    SHAPES,
    FamilyError,
    draw_scenario,
    load_family,
    named_families,
    read_family,
)
from tas_simulator.jobs import Job, JobResult
from tas_simulator.journal import Journal
from tas_simulator.scenario import load_scenario, read_scenario
from tas_simulator.seeds import SeededFigures, best_by_figure, paired_against
from tas_simulator.stats import (
    Interval,
    Statistic,
    aggregate,
    bootstrap,
    bootstrap_lead,
    clear_best,
    clearly_above_zero,
    clearly_below_zero,
    interval,
    paired_interval,
    t_quantile,
)
from tas_simulator.sweep import JOURNAL, WorseCause, summarize, table, why_worse

# ------------------------------------------------------------------------------ statistics


def test_an_interval_is_the_mean_plus_minus_t_times_the_standard_error() -> None:
    found = interval([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.776 * math.sqrt(2.5) / math.sqrt(5)
    assert found.mean == pytest.approx(3.0)
    assert (found.low, found.high) == pytest.approx((3.0 - half, 3.0 + half))


def test_one_seed_gives_a_point_not_an_interval() -> None:
    assert interval([7.0]) == Interval(7.0, 7.0, 7.0, 1)


def test_many_seeds_use_the_normal_quantile() -> None:
    assert t_quantile(2) == pytest.approx(4.303)
    assert t_quantile(200) == pytest.approx(1.96)


def test_the_clear_best_of_a_named_scenario_is_paired_by_seed() -> None:
    """Seeds 5x apart: unpaired, every interval overlaps and there is no best; paired, the
    row lower on every seed is."""
    spread = (100.0, 500.0, 250.0, 50.0, 300.0)
    rows = {
        name: _seeded(name, {i: {"stall": factor * v} for i, v in enumerate(spread)})
        for name, factor in (("requests", 1.0), ("ours", 0.9), ("tas", 1.2))
    }
    assert clear_best({n: r.intervals()["stall"] for n, r in rows.items()}) is None
    assert best_by_figure(rows, ["stall"]) == {"stall": "ours"}
    against = paired_against(rows["ours"], {"tas": rows["tas"]}, ["stall", "missing"])
    assert list(against) == ["tas"]
    assert list(against["tas"]) == ["stall"]
    low, high = against["tas"]["stall"]
    assert low <= -0.3 * 50.0
    assert high < 0


def test_a_paired_interval_is_the_t_interval_of_the_per_seed_differences() -> None:
    found = paired_interval([11.0, 52.0, 33.0], [10.0, 50.0, 30.0])
    assert found == interval([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="pairs"):
        paired_interval([1.0, 2.0], [1.0])


def test_figures_that_differ_by_float_rounding_are_not_clearly_apart() -> None:
    """Two rows that made the same run, their totals summed in another order (1e-12 apart on
    every seed, always the same way): no difference, however well the seeds agree. A real one
    of a thousandth of a core-second on every seed stays clear."""
    requests = [1270.82, 1435.82, 1450.82, 1229.57, 1419.57]
    rounded = [r + 1.2e-12 for r in requests]
    assert paired_interval(rounded, requests) == Interval(0.0, 0.0, 0.0, 5)
    assert not clearly_above_zero(paired_interval(rounded, requests))
    assert clearly_above_zero(paired_interval([r + 0.001 for r in requests], requests))


@pytest.mark.parametrize(
    ("difference", "above", "below"),
    [
        pytest.param(Interval(2.0, 1.0, 3.0, 3), True, False, id="wholly-above"),
        pytest.param(Interval(-2.0, -3.0, -1.0, 3), False, True, id="wholly-below"),
        pytest.param(Interval(1.0, -1.0, 3.0, 3), False, False, id="straddles-zero"),
        pytest.param(Interval(5.0, 5.0, 5.0, 1), False, False, id="one-pair-says-nothing"),
    ],
)
def test_a_difference_is_clear_only_wholly_on_one_side_of_zero_over_two_pairs_or_more(
    difference: Interval, above: bool, below: bool
) -> None:
    assert clearly_above_zero(difference) is above
    assert clearly_below_zero(difference) is below


def test_pairing_by_seed_decides_what_unpaired_intervals_cannot() -> None:
    """Seeds 5x apart, ours 10% below requests on each: unpaired, the intervals overlap and
    nothing is said; paired, ours is clearly lower."""
    requests = [100.0, 500.0, 250.0, 50.0, 300.0]
    ours = [0.9 * r for r in requests]
    assert interval(ours).overlaps(interval(requests))
    assert clearly_below_zero(paired_interval(ours, requests))


@pytest.mark.parametrize(
    ("values", "statistic", "estimate"),
    [
        pytest.param([0.5, 2.0], Statistic.GEOMETRIC_MEAN, 1.0, id="half-and-double-cancel"),
        pytest.param([0.1, 0.2, 0.9], Statistic.MEDIAN, 0.2, id="median"),
        pytest.param([1.0, 0.0, 1.0, 1.0], Statistic.MEAN, 0.75, id="share"),
        pytest.param([4.0], Statistic.MEDIAN, 4.0, id="one-value-is-a-point"),
    ],
)
def test_a_bootstrap_gives_the_statistic_inside_its_interval(
    values: list[float], statistic: Statistic, estimate: float
) -> None:
    found = bootstrap(values, statistic)
    assert found.mean == pytest.approx(estimate)
    assert found.low <= found.mean <= found.high
    assert found.n == len(values)
    assert (found.low < found.high) is (len(set(values)) > 1)


def test_a_bootstrap_is_the_same_on_every_call_and_narrows_with_more_scenarios() -> None:
    few = [0.6, 1.1, 0.8, 0.9, 0.7, 1.3, 0.5, 0.95]
    assert bootstrap(few, Statistic.GEOMETRIC_MEAN) == bootstrap(few, Statistic.GEOMETRIC_MEAN)
    many = bootstrap(few * 10, Statistic.GEOMETRIC_MEAN)
    wide = bootstrap(few, Statistic.GEOMETRIC_MEAN)
    assert many.high - many.low < wide.high - wide.low
    with pytest.raises(ValueError, match="above 0"):
        bootstrap([1.0, 0.0], Statistic.GEOMETRIC_MEAN)


def test_a_lead_is_the_share_less_the_highest_other_share_resampled_together() -> None:
    mine = [1.0] * 20
    close = [1.0] * 19 + [0.0]
    far = [0.0] * 20
    lead = bootstrap_lead(mine, [far, close])
    assert lead.mean == pytest.approx(0.05)
    assert lead.low >= 0.0
    behind = bootstrap_lead(far, [mine, close])
    assert behind.mean == pytest.approx(-1.0)
    assert behind.high < 0
    with pytest.raises(ValueError, match="same scenarios"):
        bootstrap_lead(mine, [mine[:3]])


@pytest.mark.parametrize(
    ("intervals", "best"),
    [
        pytest.param(
            {"a": Interval(1, 0.5, 1.5, 5), "b": Interval(3, 2, 4, 5)}, "a", id="disjoint"
        ),
        pytest.param(
            {"a": Interval(1, 0.5, 2.5, 5), "b": Interval(3, 2, 4, 5)}, None, id="overlap-is-a-tie"
        ),
        pytest.param(
            {
                "a": Interval(1, 0.5, 1.5, 5),
                "b": Interval(3, 2, 4, 5),
                "c": Interval(1.2, 1.0, 1.4, 5),
            },
            None,
            id="a-third-contender-overlaps-the-leader",
        ),
        pytest.param({"a": Interval(1, 0.5, 1.5, 5)}, None, id="alone-is-best-of-nothing"),
    ],
)
def test_best_needs_an_interval_below_every_other(
    intervals: dict[str, Interval], best: str | None
) -> None:
    assert clear_best(intervals) == best


def test_a_contenders_figures_over_seeds_follow_the_seeds_added_and_are_aggregated_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []

    def counted(runs: Any) -> Any:
        calls.append(len(runs))
        return aggregate(runs)

    monkeypatch.setattr(tas_simulator.seeds, "aggregate", counted)
    ours = SeededFigures("ours", {1: {"stall": 2.0}, 2: {"stall": 4.0}})
    other = SeededFigures("other", {1: {"stall": 9.0}, 2: {"stall": 9.5}})
    assert ours.means() == {"stall": 3.0}
    assert ours.ci95()["stall"][0] < 3.0 < ours.ci95()["stall"][1]
    assert best_by_figure({"ours": ours, "other": other}, ["stall"]) == {"stall": None}
    assert calls == [2, 2]  # once per contender, however many readers
    ours.by_seed[3] = {"stall": 3.0}
    assert ours.intervals()["stall"].n == 3
    assert calls == [2, 2, 3]


# ------------------------------------------------------------------------------ families


@pytest.mark.parametrize("name", named_families())
def test_every_scenario_a_shipped_family_draws_is_a_valid_scenario(name: str) -> None:
    family = load_family(name)
    for index in range(60):
        read_scenario(draw_scenario(family, index), base=FAMILIES)


def test_the_second_family_differs_from_the_default_in_sizes_pipelines_and_restarts() -> None:
    """Issue 46: a family the defaults were not written against, so its draws must differ from
    the default's where a default could be tuned: fleet size, pipeline lag; both pay real
    start-ups."""

    def drawn(name: str) -> dict[str, list[float]]:
        family = load_family(name)
        found: dict[str, list[float]] = {"nodes": [], "lag": [], "startup": []}
        for index in range(40):
            scenario = read_scenario(draw_scenario(family, index), base=FAMILIES)
            found["nodes"].append(len(scenario.nodes))
            pipeline = scenario.pipeline
            found["lag"].append(pipeline.scrape_interval + pipeline.window + pipeline.delay)
            # The mean start-up: large-slow draws each start's within a range.
            most = scenario.startup_delay_most or scenario.startup_delay
            found["startup"].append((scenario.startup_delay + most) / 2)
        return found

    default, large = drawn("default"), drawn("large-slow")
    for figure in ("nodes", "lag"):
        assert statistics.median(large[figure]) > 1.5 * statistics.median(default[figure]), figure
    # Since issue 54 both draw realistic start-ups (the default family over 10-120 s): neither
    # family's moves are cheap, so start-up cost no longer tells them apart.
    assert statistics.median(default["startup"]) >= 30
    assert statistics.median(large["startup"]) >= 30


def test_a_draw_depends_on_its_index_only() -> None:
    assert draw_scenario(load_family("default"), 17) == draw_scenario(load_family("default"), 17)
    assert draw_scenario(load_family("default"), 17) != draw_scenario(load_family("default"), 18)


def test_the_default_family_covers_what_the_named_scenarios_do() -> None:
    family = load_family("default")
    events: Counter[str] = Counter()
    shapes: Counter[str] = Counter()
    policies: Counter[tuple[str, ...]] = Counter()
    mixed = bursts = vms = scale_outs = 0
    for index in range(200):
        document = draw_scenario(family, index)
        vms += any(w.get("migration") == "live" for w in document["workloads"])
        joins = [_seconds(e["at"]) for e in document["events"] if "add-nodes" in e]
        bursts_at = [
            _seconds(e["at"]) for e in document["events"] if e.get("scale", {}).get("burst")
        ]
        scale_outs += any(0 < b - j <= 60 for j in joins for b in bursts_at)
        for event in document["events"]:
            events.update(k for k in event if k != "at")
            bursts += bool(event.get("scale", {}).get("burst"))
        for workload in document["workloads"]:
            shapes[workload["name"].rsplit("-", 1)[0]] += 1
        sizes = {(n["cpu"], n["memory"]) for n in document["nodes"]}
        mixed += len(sizes) > 1
        policies[tuple(sorted(p["metadata"]["name"] for p in document["policies"]))] += 1
    drawn_kinds = {
        "set-health", "metric-outage", "bogus-metric", "cordon", "uncordon", "taint", "untaint",
        "scale", "add-nodes", "remove-nodes",
    }  # fmt: skip
    assert drawn_kinds <= set(events), events
    assert set(SHAPES) - {"burst"} <= set(shapes), shapes
    assert mixed >= 20
    assert bursts >= 20
    assert vms >= 20
    # Nodes joining a hot fleet and a burst arriving for them within a minute (scale-out).
    assert scale_outs >= 15
    assert len(policies) == 4, policies


def _family(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((FAMILIES / "default.yaml").read_text())
    document.update(changes)
    return document


def test_a_bad_family_lists_every_problem() -> None:
    document = _family(
        load={"uniform": [0.9, 0.2]},
        events={"earthquake": 0.5, "cordon": 2},
        nodes={"count": {"int": [3, 2.5]}, "sizes": [{"cpu": "lots", "memory": "1Gi"}]},
        colour="blue",
    )
    with pytest.raises(FamilyError) as raised:
        read_family(document, source="bad.yaml", base=FAMILIES)
    text = "\n".join(raised.value.problems)
    for expected in (
        "colour: unknown field",
        "load.uniform: low is above high",
        "events.earthquake: unknown",
        "events.cordon: a probability must be between 0 and 1",
        "nodes.count.int[1]: must be a whole number",
        "nodes.sizes[0].cpu",
    ):
        assert expected in text
    assert all(p.startswith("bad.yaml: ") for p in raised.value.problems)


_plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=20,
)
_keys = st.sampled_from(
    ["name", "seed", "scenario", "metrics", "nodes", "load", "usagePerRequest", "workloads",
     "policies", "events", "healthEffects", "contenders"]
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_keys, _plain, max_size=8))
def test_no_family_document_crashes_the_reader(changes: dict[str, Any]) -> None:
    problems: tuple[str, ...] = ()
    try:
        read_family(_family(**changes), base=FAMILIES)
    except FamilyError as error:
        problems = error.problems or ("(a FamilyError that names no problem)",)
        assert all(isinstance(p, str) and p for p in problems)


# ------------------------------------------------------------------------------ commands


def test_simulate_on_several_seeds_reports_means_intervals_and_clear_bests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["simulate", "health-demo", "--duration", "5m", "--seeds", "3", "--workers", "1",
         "--contenders", "requests,ours", "--no-charts", "--out", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    entry = json.loads((tmp_path / "summary.json").read_text())["scenarios"]["health-demo"]
    assert entry["seeds"] == [1, 2, 3]
    for contender in ("requests", "ours"):
        low, high = entry["ci95"][contender]["work_lost"]["core_seconds"]
        assert low <= entry["contenders"][contender]["work_lost"]["core_seconds"] <= high
    # requests never evicts and ours does, on every seed: a clear difference, not a tie.
    assert entry["best"]["evictions.total"] == "requests"
    # The reference rows: in summary.json with the same figures, never judged best.
    assert set(entry["references"]) == {"limit", "hindsight", "clairvoyant"}
    limit = entry["references"]["limit"]
    assert (
        limit["work_lost"]["core_seconds"]
        <= entry["contenders"]["ours"]["work_lost"]["core_seconds"]
    )
    assert "limit" not in entry["best"].values()
    assert "clairvoyant" not in entry["best"].values()
    assert set(entry["share_of_gain"]["ours"]) == {"work_lost", "stall"}
    assert set(entry["share_of_gain_hindsight"]["ours"]) == {"work_lost", "stall"}
    assert set(entry["gaps"]) == {"pipeline", "rules"}
    out = capsys.readouterr().out
    assert "health-demo (seeds 1..3, means, 5 min)" in out
    assert "limit (ref)" in out
    assert "hindsight (ref)" in out
    assert "clairvoyant (ref)" in out


def _sweep(out: Path, *extra: str) -> int:
    return main(
        ["sweep", "--count", "3", "--seeds", "2", "--contenders", "requests,tas,ours",
         "--out", str(out), *extra]
    )  # fmt: skip


@pytest.fixture(scope="module")
def one_process(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep-1")
    assert _sweep(out, "--workers", "1") == 0
    return out


def test_a_sweep_writes_its_verdict_in_the_documented_shape(one_process: Path) -> None:
    verdict = json.loads((one_process / "sweep.json").read_text())
    assert verdict["scenarios"] == 3
    assert (verdict["family"], verdict["family_seed"], verdict["seeds"]) == ("default", 2026, 2)
    assert set(verdict["contenders"]) == {"requests", "tas", "ours"}
    for figures in verdict["contenders"].values():
        assert set(figures) == {
            "best_share", "best_or_tied_share", "undominated_share", "work_lost_vs_requests",
            "stall_vs_requests",
            "worse_than_requests", "max_evictions_per_pod_hour", "violating_placements",
            "share_of_gain", "share_of_gain_hindsight", "herd_ratio_by_load", "population",
            "source",
        }  # fmt: skip
        population = figures["population"]
        assert set(population) == {
            "work_lost_vs_requests", "stall_vs_requests", "share_of_gain_hindsight",
            "share_of_gain_limit", "undominated",
        }  # fmt: skip
        ratio = population["work_lost_vs_requests"]
        assert ratio["low"] <= ratio["estimate"] <= ratio["high"]
        assert ratio["scenarios"] == 3
        assert set(figures["source"]) == {"name", "undominated", "lead"}
        assert 0 <= figures["best_share"] <= figures["best_or_tied_share"]["work_lost"] <= 1
        assert (
            figures["max_evictions_per_pod_hour"]["p95"]
            <= figures["max_evictions_per_pod_hour"]["max"]
        )
        assert set(figures["work_lost_vs_requests"]) == {"p50", "p90"}
    # requests against itself is 1.0 in every scenario, and never worse than itself.
    requests = verdict["contenders"]["requests"]
    assert requests["work_lost_vs_requests"] == {"p50": 1.0, "p90": 1.0}
    assert requests["worse_than_requests"]["scenarios"] == 0
    # Every scenario has a best or tied contender on work lost.
    assert max(c["best_or_tied_share"]["work_lost"] for c in verdict["contenders"].values()) > 0
    # The reference rows, apart from the contenders: the limit loses no more than requests.
    assert set(verdict["references"]) == {"limit", "hindsight", "clairvoyant"}
    assert verdict["references"]["limit"]["work_lost_vs_requests"]["p90"] <= 1.0
    # Where the limit shows no scheduler meets both ratio goals, by scenario name.
    joint = verdict["references"]["limit"]["both_goals_out_of_reach"]
    assert joint["of"] == 3
    assert set(joint["scenarios"]) <= {p.stem for p in (one_process / "scenarios").glob("*.yaml")}
    # The share against the hindsight placement: a median over the scenarios it counts.
    gain = verdict["contenders"]["ours"]["share_of_gain_hindsight"]["work_lost"]
    assert set(gain) == {"median", "p10", "scenarios"}
    assert 0 <= gain["scenarios"] <= 3
    assert (gain["median"] is None) == (gain["scenarios"] == 0)
    # The clairvoyant is judged like ours, in ours' place: every figure a contender has.
    clairvoyant = verdict["references"]["clairvoyant"]
    assert set(clairvoyant) == set(verdict["contenders"]["ours"])
    assert set(clairvoyant["share_of_gain"]) == {"work_lost", "stall"}


def _result(
    scenario: str,
    contender: str,
    seed: int,
    lost: float,
    placed: int,
    stall: float | None = None,
    unavoidable: int = 0,
) -> JobResult:
    figures: dict[str, Any] = {
        "work_lost": {"core_seconds": lost},
        "stall": lost if stall is None else stall,
        "violating_placements": placed,
        "unavoidable_placements": unavoidable,
        "evictions": {"total": 0, "max_per_pod_hour": 0},
    }
    return JobResult(scenario, contender, seed, figures)


def test_the_clairvoyant_is_judged_in_ours_place_among_the_same_contenders() -> None:
    """The bound a goal is read against: ours' code on true values, compared with the other
    contenders as ours is, and never counted into theirs."""
    rows = {
        # a: ours loses more than requests; the clairvoyant would tie with it.
        "a": {"requests": 10.0, "ours": 50.0, "clairvoyant": 10.0, "limit": 5.0},
        # b: ours wins; the clairvoyant, reading true values, loses beyond requests' interval.
        "b": {"requests": 10.0, "ours": 5.0, "clairvoyant": 40.0, "limit": 5.0},
    }
    results = [
        _result(name, row, seed, lost + seed, placed=1 if row == "ours" and name == "a" else 0)
        for name, losses in rows.items()
        for row, lost in losses.items()
        for seed in (0, 1, 2)
    ]
    verdict = summarize(results, ("requests", "ours"), 2)
    ours, clairvoyant = verdict["contenders"]["ours"], verdict["references"]["clairvoyant"]
    assert ours["best_or_tied_share"]["work_lost"] == 0.5  # b only
    assert clairvoyant["best_or_tied_share"]["work_lost"] == 0.5  # a only
    assert clairvoyant["worse_than_requests"]["scenarios"] == 1  # b
    assert ours["violating_placements"] == {
        "total": 3, "none_share": 0.5, "unavoidable": 0, "none_avoidable_share": 0.5,
    }  # fmt: skip
    assert clairvoyant["violating_placements"]["none_share"] == 1.0
    # Judging the clairvoyant leaves the contenders' own tallies as they were.
    assert verdict["contenders"]["requests"]["best_or_tied_share"]["work_lost"] == 0.5
    # Each is clearly worse than another on both figures in one scenario of the two.
    assert ours["undominated_share"] == clairvoyant["undominated_share"] == 0.5


def test_a_trade_of_stall_for_lost_work_does_not_dominate() -> None:
    """Pods left pending stall nothing: less stall for more lost work is another trade, not a
    better one; clearly less of one for no more of the other is."""
    results = [
        _result("trade", "requests", seed, 10.0 + seed, 0, stall=100.0 + seed) for seed in (0, 1, 2)
    ] + [_result("trade", "ours", seed, 50.0 + seed, 0, stall=20.0 + seed) for seed in (0, 1, 2)]
    verdict = summarize(results, ("requests", "ours"), 1)
    assert verdict["contenders"]["ours"]["undominated_share"] == 1.0
    assert verdict["contenders"]["requests"]["undominated_share"] == 1.0
    better = [
        _result("trade", "ours", seed, 10.0 + seed, 0, stall=20.0 + seed) for seed in (0, 1, 2)
    ]
    verdict = summarize(results[:3] + better, ("requests", "ours"), 1)
    assert verdict["contenders"]["requests"]["undominated_share"] == 0.0
    assert "undominated" in table(verdict)


def test_the_herd_ratio_by_load_is_summarized_over_the_runs_with_a_burst() -> None:
    results = [_result("calm", "ours", seed, 1.0, 0) for seed in (0, 1)]
    for seed, herd in enumerate((1.0, 1.2, 3.0)):
        burst = _result("burst", "ours", seed, 1.0, 0)
        results.append(
            dataclasses.replace(burst, figures={**burst.figures, "herd_ratio_by_load": herd})
        )
    herd = summarize(results, ("ours",), 2)["contenders"]["ours"]["herd_ratio_by_load"]
    assert herd["runs"] == 3  # the calm runs have no burst and count for nothing
    assert herd["p50"] == 1.2
    assert herd["max"] == 3.0
    assert 1.2 < herd["p95"] <= 3.0
    calm = summarize(results[:2], ("ours",), 1)["contenders"]["ours"]["herd_ratio_by_load"]
    assert calm == {"p50": None, "p95": None, "max": None, "runs": 0}
    assert "herd p95" in table(summarize(results, ("ours",), 2))


def test_every_drawn_scenario_is_saved_and_replays(one_process: Path, tmp_path: Path) -> None:
    saved = sorted((one_process / "scenarios").glob("*.yaml"))
    assert [p.stem for p in saved] == ["default-0000", "default-0001", "default-0002"]
    runs = json.loads((one_process / "runs.json").read_text())["runs"]
    first = yaml.safe_load(saved[0].read_text())
    code = main(
        ["simulate", str(saved[0]), "--seeds", "1", "--workers", "1", "--contenders", "ours",
         "--no-charts", "--out", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    replay = json.loads((tmp_path / "summary.json").read_text())["scenarios"]["default-0000"]
    swept = runs["default-0000"]["ours"][str(first["seed"])]
    assert replay["contenders"]["ours"]["work_lost"]["core_seconds"] == pytest.approx(
        swept["work_lost"]["core_seconds"], rel=1e-5
    )


def test_a_process_pool_gives_the_same_bytes(one_process: Path, tmp_path: Path) -> None:
    assert _sweep(tmp_path, "--workers", "2") == 0
    for name in ("sweep.json", "runs.json"):
        assert (tmp_path / name).read_bytes() == (one_process / name).read_bytes()


def test_a_dask_cluster_gives_the_same_bytes(one_process: Path, tmp_path: Path) -> None:
    # make test installs the [sim] extra: a missing `distributed` fails here, never skips.
    with LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        assert _sweep(tmp_path, "--dask", cluster.scheduler_address) == 0
    for name in ("sweep.json", "runs.json"):
        assert (tmp_path / name).read_bytes() == (one_process / name).read_bytes()


def test_a_bad_family_file_exits_1_listing_its_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    family = tmp_path / "family.yaml"
    family.write_text(yaml.safe_dump(_family(load="high", events={"flood": 1})))
    assert main(["sweep", "--family", str(family), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "load: must be a number" in err
    assert "events.flood: unknown" in err


def test_every_event_kind_is_named_in_the_default_family() -> None:
    family = yaml.safe_load((FAMILIES / "default.yaml").read_text())
    assert set(family["events"]) == set(EVENT_KINDS)


def test_placements_where_every_node_violated_are_told_apart() -> None:
    """A scenario whose only violating placements were unavoidable (every fitting node
    violated) counts as clean of avoidable ones, and not as clean."""
    results = [
        _result("hot", row, seed, 10.0, placed=2, unavoidable=2 if row == "ours" else 1)
        for row in ("requests", "ours")
        for seed in (0, 1)
    ]
    placed = summarize(results, ("requests", "ours"), 1)["contenders"]
    assert placed["ours"]["violating_placements"] == {
        "total": 4, "none_share": 0.0, "unavoidable": 4, "none_avoidable_share": 1.0,
    }  # fmt: skip
    assert placed["requests"]["violating_placements"]["none_avoidable_share"] == 0.0


def _judged(
    lost: float,
    overload: float,
    stall: float,
    evacuated: float,
    for_rule: int = 0,
    displaced_by_rule: float = 0.0,
    withheld_by_rule: float = 0.0,
) -> dict[str, Any]:
    return {
        "work_lost": {
            "core_seconds": lost,
            "stalled": overload,
            "displaced_by_rule": displaced_by_rule,
            "withheld_by_rule": withheld_by_rule,
        },
        "stall": stall,
        "evacuation_seconds": {"evacuated": evacuated},
        "violating_placements": 0,
        "evictions": {"total": for_rule, "max_per_pod_hour": 0, "deschedule_rule": for_rule},
    }


def test_each_scenario_worse_than_requests_says_why() -> None:
    """A reader of the goal line learns which losses are a policy obeyed, which a trade the
    stall figure shows, and which are plain harm (the ones to read first)."""
    requests = _judged(lost=100.0, overload=100.0, stall=1000.0, evacuated=0.0)
    ours_by_scenario = {
        # It evacuated a node the policy's deschedule rule named (requests left it running),
        # and what those evictions displaced accounts for the 200 core-s beyond requests'.
        "obeyed": _judged(
            lost=300.0,
            overload=100.0,
            stall=1000.0,
            evacuated=1.0,
            for_rule=4,
            displaced_by_rule=200.0,
        ),
        # It evicted for the rule, and the node recovered before it was empty.
        "obeyed, not emptied": _judged(
            lost=300.0,
            overload=150.0,
            stall=1000.0,
            evacuated=0.0,
            for_rule=2,
            displaced_by_rule=250.0,
        ),
        # It evicted for the rule, but those evictions displaced 20 core-s of the 200 it lost
        # beyond requests: the rest is overload, a worse placement.
        "obeyed, lost elsewhere": _judged(
            lost=300.0,
            overload=280.0,
            stall=1000.0,
            evacuated=1.0,
            for_rule=2,
            displaced_by_rule=20.0,
        ),
        # It kept pods off a node the rule named, whose free cores could have served 180
        # core-s of the overload elsewhere: with the 20 its evictions displaced, the 200.
        "kept off": _judged(
            lost=300.0,
            overload=280.0,
            stall=1000.0,
            evacuated=1.0,
            for_rule=2,
            displaced_by_rule=20.0,
            withheld_by_rule=180.0,
        ),
        # Restarts (no more overload) that bought clearly less stall, 500 node-s for 50 core-s.
        "trade": _judged(lost=150.0, overload=100.0, stall=500.0, evacuated=0.0),
        # The same restarts buying 10 node-s: less than a node-second per core-second.
        "futile": _judged(lost=150.0, overload=100.0, stall=990.0, evacuated=0.0),
        # More work lost to overload: a worse placement.
        "harm": _judged(lost=150.0, overload=150.0, stall=900.0, evacuated=0.0),
        # Better than requests: not counted at all.
        "better": _judged(lost=50.0, overload=50.0, stall=1000.0, evacuated=0.0),
    }
    results = [
        JobResult(name, contender, seed, _jitter(figures, seed))
        for name, ours in ours_by_scenario.items()
        for contender, figures in (("requests", requests), ("ours", ours))
        for seed in (0, 1, 2)
    ]
    verdict = summarize(results, ("requests", "ours"), len(ours_by_scenario))
    worse = verdict["contenders"]["ours"]["worse_than_requests"]
    assert worse == {
        "scenarios": 7,
        "by_cause": {
            "deschedule_rule": 2, "rule_withheld": 1, "restarts_for_stall": 1, "other": 3,
        },
    }  # fmt: skip
    assert verdict["contenders"]["requests"]["worse_than_requests"]["by_cause"] == {
        "deschedule_rule": 0, "rule_withheld": 0, "restarts_for_stall": 0, "other": 0,
    }  # fmt: skip


def _seeded(contender: str, by_seed: dict[int, dict[str, Any]]) -> SeededFigures:
    seeded = SeededFigures(contender)
    seeded.by_seed.update(by_seed)
    return seeded


@pytest.mark.parametrize(
    ("displaced_by_rule", "cause"),
    [
        pytest.param(200.0, WorseCause.DESCHEDULE_RULE, id="the rule's moves cost all 200"),
        pytest.param(500.0, WorseCause.DESCHEDULE_RULE, id="more than all of it"),
        pytest.param(199.0, WorseCause.OTHER, id="a core-second short"),
        pytest.param(None, WorseCause.OTHER, id="figures without the split"),
    ],
)
def test_a_deschedule_rule_is_the_cause_when_what_it_displaced_accounts_for_the_loss(
    displaced_by_rule: float | None, cause: WorseCause
) -> None:
    """Ours 200 core-seconds beyond requests: the rule is why only when the core-seconds its
    evictions displaced (from each eviction until the pod ran again) make up those 200."""
    requests = _seeded("requests", {s: {"work_lost": {"core_seconds": 100.0 + s}} for s in (1, 2)})
    ours = _seeded(
        "ours",
        {
            s: {
                "work_lost": {"core_seconds": 300.0 + s}
                | ({} if displaced_by_rule is None else {"displaced_by_rule": displaced_by_rule}),
                "evictions": {"deschedule_rule": 4},
            }
            for s in (1, 2)
        },
    )
    assert why_worse(ours, requests) is cause


@pytest.mark.parametrize(
    ("withheld", "cause"),
    [
        pytest.param({"ours": 80.0, "requests": 10.0}, WorseCause.RULE_WITHHELD, id="70 idle"),
        pytest.param({"ours": 79.0, "requests": 10.0}, WorseCause.OTHER, id="a core-second short"),
        pytest.param({"ours": 80.0, "requests": 80.0}, WorseCause.OTHER, id="requests no fuller"),
    ],
)
def test_a_rule_keeping_capacity_idle_is_said_beside_what_its_evictions_displaced(
    withheld: dict[str, float], cause: WorseCause
) -> None:
    """Ours 200 core-seconds beyond requests, 130 of them displaced by the rule's evictions:
    the rest is the rule's doing only when the free cores of its violating nodes, beyond what
    requests left free there, could have served it."""
    rows = {
        row: _seeded(
            row,
            {
                s: {
                    "work_lost": {
                        "core_seconds": lost + s,
                        "displaced_by_rule": displaced,
                        "withheld_by_rule": withheld[row],
                    }
                }
                for s in (1, 2)
            },
        )
        for row, lost, displaced in (("requests", 100.0, 0.0), ("ours", 300.0, 130.0))
    }
    assert why_worse(rows["ours"], rows["requests"]) is cause


def _jitter(figures: dict[str, Any], seed: int) -> dict[str, Any]:
    """The same figures, a little apart on each seed, so each interval has a width."""
    out = json.loads(json.dumps(figures))
    out["work_lost"]["core_seconds"] += seed
    out["stall"] += seed
    return out


def test_ours_without_its_rules_doing_no_worse_excuses_nothing() -> None:
    """The rule excuses a loss only where what its evictions displaced covers it: a run of
    ours without the deschedule strategies that does no worse than requests (the old excuse)
    proves nothing about where the loss came from, and a sweep no longer counts it."""
    results = [
        _result("ruled", row, seed, lost + seed, 0)
        for row, lost in (("requests", 100.0), ("ours", 300.0), ("ours-no-deschedule", 100.0))
        for seed in (0, 1, 2)
    ]
    worse = summarize(results, ("requests", "ours"), 1)["contenders"]["ours"]["worse_than_requests"]
    assert worse == {
        "scenarios": 1,
        "by_cause": {"deschedule_rule": 0, "rule_withheld": 0, "restarts_for_stall": 0, "other": 1},
    }


def test_a_scenario_without_its_deschedule_strategies_keeps_the_rest() -> None:
    scenario = load_scenario("health-demo")
    assert scenario.has_deschedule_rules
    unruled = scenario.without_deschedule()
    assert not unruled.has_deschedule_rules
    assert [set(p["spec"]["strategies"]) for p in unruled.policies] == [
        set(p["spec"]["strategies"]) - {"deschedule"} for p in scenario.policies
    ]
    assert unruled.nodes == scenario.nodes
    assert unruled.events == scenario.events


def test_ours_without_the_rules_runs_and_evicts_nothing_for_a_rule() -> None:
    from tas_simulator.jobs import UNRULED, Job, run_job

    scenario = load_scenario("health-demo").with_duration(600)
    ruled = run_job(Job(scenario, "ours", 1)).figures
    unruled = run_job(Job(scenario, UNRULED, 1)).figures
    assert ruled is not None
    assert unruled is not None
    assert ruled["evictions"]["deschedule_rule"] > 0
    assert unruled["evictions"]["deschedule_rule"] == 0


def test_an_interrupted_sweep_resumes_to_the_same_bytes(
    one_process: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As a kill leaves it: the first half of the runs written, the last of them mid-line.
    lines = (one_process / JOURNAL).read_text().splitlines(keepends=True)
    assert len(lines) == 3 * 2 * (3 + 3)  # scenarios x seeds x (contenders + references)
    kept = lines[: len(lines) // 2]
    (tmp_path / JOURNAL).write_text("".join(kept[:-1]) + kept[-1][:40])
    assert _sweep(tmp_path, "--workers", "1") == 0
    assert "resuming" in capsys.readouterr().err
    for name in ("sweep.json", "runs.json"):
        assert (tmp_path / name).read_bytes() == (one_process / name).read_bytes()
    # The torn run ran again and is whole now; nothing finished before ran twice.
    journal = [json.loads(line) for line in (tmp_path / JOURNAL).read_text().splitlines()]
    assert len(journal) == len({entry["key"] for entry in journal}) == len(lines)


def _tampered(out: Path, source: Path) -> float:
    """`source`'s journal in `out`, with requests' first run claiming a made-up work lost."""
    entries = [json.loads(line) for line in (source / JOURNAL).read_text().splitlines()]
    first = next(e for e in entries if e["contender"] == "requests")
    first["figures"]["work_lost"]["core_seconds"] = made_up = 123456.0
    (out / JOURNAL).write_text("".join(json.dumps(e) + "\n" for e in entries))
    return made_up


def _first_requests_run(out: Path) -> float:
    runs = json.loads((out / "runs.json").read_text())["runs"]["default-0000"]["requests"]
    value: float = runs[min(runs)]["work_lost"]["core_seconds"]
    return value


def test_a_finished_run_is_reused_not_run_again_and_fresh_runs_it_again(
    one_process: Path, tmp_path: Path
) -> None:
    made_up = _tampered(tmp_path, one_process)
    assert _sweep(tmp_path, "--workers", "1") == 0
    assert _first_requests_run(tmp_path) == made_up
    assert _sweep(tmp_path, "--workers", "1", "--fresh") == 0
    assert _first_requests_run(tmp_path) == _first_requests_run(one_process) != made_up


def test_a_run_is_reused_only_for_the_same_code_and_scenario_text(one_process: Path) -> None:
    scenario = load_scenario(str(one_process / "scenarios" / "default-0000.yaml"))
    job = Job(scenario, "requests", scenario.seed)
    assert Journal(one_process / JOURNAL).known(job) is not None
    assert Journal(one_process / JOURNAL, code="another commit").known(job) is None
    changed = dataclasses.replace(scenario, source=str(one_process / "scenarios/default-0001.yaml"))
    assert Journal(one_process / JOURNAL).known(Job(changed, "requests", scenario.seed)) is None


def _runs(scenario: str, rows: dict[str, tuple[float, float]]) -> list[JobResult]:
    """Each row's (work lost, stall) on seeds 0..4, a seed-to-seed spread shared by every
    row: the same worlds, so paired differences are exact."""
    return [
        _result(scenario, row, seed, lost * (1 + seed), 0, stall=stall * (1 + seed))
        for row, (lost, stall) in rows.items()
        for seed in range(5)
    ]


def test_a_source_is_undominated_where_any_of_its_documented_settings_is() -> None:
    """A source's rows are its documented settings: the PSI profile at 60 s beating it hourly
    does not dominate the hourly row, and the source is undominated where either row is. Any
    row of another source dominating ours makes ours dominated."""
    rows = ("requests", "psi-profile", "psi-profile-60s", "ours")
    results = _runs(
        "ours-ahead",
        {
            "requests": (100.0, 100.0),
            "psi-profile": (100.0, 100.0),
            "psi-profile-60s": (50.0, 400.0),  # a trade, not a better one
            "ours": (80.0, 300.0),
        },
    ) + _runs(
        "sixty-ahead",
        {
            "requests": (100.0, 100.0),
            "psi-profile": (100.0, 100.0),
            "psi-profile-60s": (50.0, 50.0),
            "ours": (100.0, 100.0),
        },
    )
    verdict = summarize(results, rows, 2)["contenders"]
    assert verdict["ours"]["undominated_share"] == 0.5
    assert verdict["requests"]["undominated_share"] == 0.5
    assert verdict["psi-profile"]["undominated_share"] == 1.0  # its 60 s row does not count
    assert verdict["psi-profile"]["source"]["name"] == "psi-profile"
    assert verdict["psi-profile"]["source"]["undominated"]["estimate"] == 1.0
    assert verdict["psi-profile-60s"]["source"] == verdict["psi-profile"]["source"]
    lead = verdict["ours"]["source"]["lead"]
    assert lead["next"] == "psi-profile"
    assert lead["estimate"] == pytest.approx(-0.5)


def test_the_gain_counts_every_scenario_with_a_unit_to_gain_however_requests_varies() -> None:
    """Requests 5x apart over the seeds, ours below it on every seed: a scenario to count,
    which a filter on requests' interval dropped. Shares are clamped to -100%..100%."""
    results = _runs(
        "noisy",
        {"requests": (100.0, 10.0), "hindsight": (20.0, 5.0), "ours": (60.0, 10.0)},
    ) + _runs(
        "tiny-gain",
        {"requests": (10.5, 10.0), "hindsight": (10.0, 5.0), "ours": (60.0, 10.0)},
    )
    verdict = summarize(results, ("requests", "ours"), 2)["contenders"]["ours"]
    gain = verdict["share_of_gain_hindsight"]["work_lost"]
    assert gain["scenarios"] == 2
    population = verdict["population"]["share_of_gain_hindsight"]
    assert population["scenarios"] == 2
    # The noisy scenario's share is 40 / 80 = 50%; the tiny one's is far below -100%, clamped.
    assert (population["low"], population["estimate"], population["high"]) == pytest.approx(
        (-1.0, -0.25, 0.5)
    )


def test_the_population_ratio_is_a_geometric_mean_with_a_bootstrap_interval() -> None:
    results = [
        result
        for i, lost in enumerate((50.0, 100.0, 200.0, 80.0))
        for result in _runs(f"s{i}", {"requests": (100.0, 100.0), "ours": (lost, 100.0)})
    ]
    # Means over the seeds are 3x the first seed's (`_runs`), one unit added to each side.
    ratios = [(3 * lost + 1) / 301 for lost in (50.0, 100.0, 200.0, 80.0)]
    ratio = summarize(results, ("requests", "ours"), 4)["contenders"]["ours"]["population"][
        "work_lost_vs_requests"
    ]
    assert ratio["estimate"] == pytest.approx(statistics.geometric_mean(ratios), rel=1e-9)
    assert ratio["low"] < ratio["estimate"] < ratio["high"]
    assert ratio["scenarios"] == 4


def test_a_fresh_draw_sweeps_other_scenarios_and_says_its_family_seed(tmp_path: Path) -> None:
    """`--family-seed N` judges the family on a draw nobody tuned for: other scenarios than the
    shipped seed's, with the seed in sweep.json."""
    fresh = tmp_path / "fresh"
    args = ["sweep", "--count", "1", "--seeds", "1", "--contenders", "requests", "--workers", "1"]
    assert main([*args, "--family-seed", "20261201", "--out", str(fresh)]) == 0
    verdict = json.loads((fresh / "sweep.json").read_text())
    assert verdict["family_seed"] == 20261201
    (drawn,) = (fresh / "scenarios").glob("*.yaml")
    shipped = draw_scenario(load_family("default"), 0)
    assert yaml.safe_load(drawn.read_text()) != shipped
    assert yaml.safe_load(drawn.read_text())["name"] == shipped["name"]
