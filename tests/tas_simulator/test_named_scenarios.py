"""Every named scenario, shortened to a few minutes, for every contender that can run here;
the issue's goals that hold on short runs; determinism. scale-500's runs are
tests/tas_simulator/test_references.py's (each contender's, against the limit), not repeated
here: its 10,000 pods' first placement is most of a run's time.

Covered:
- each contender runs each scenario and reports every figure (contenders whose descheduler
  document the config reader rejects are skipped with its reason);
- ours places no pod on a node that violates the pod's dontschedule rules, in every scenario
  but psi-skewed (a strict xfail since the world's PSI is not ours' model, issue 54);
- health-demo: TAS and ours both empty the violating node, ours within one controller sync,
  one descheduling interval and the metric lag;
- psi-taint-release: ours loses less work than `requests`, evicts no pod more than twice an
  hour, and evicts less than the OpenShift PSI profile; at most half `requests`' work lost is a
  strict xfail since the world's PSI is not ours' model (issue 54);
- metric-outage: ours evicts nothing while its metrics are stale and keeps placing pods;
- bogus-metric: ours evicts nothing while every node looks broken, and keeps placing pods;
- herd: herd control is what keeps the burst off the idle node: on several seeds, ours puts
  at most the load-balanced share of the burst on one node, and the same ours without its
  tracker puts the whole burst there; with herd control, ours puts no more than the
  load-balanced share of the burst on one node, with no violating placement; that it fills the
  idle node to the fleet's load, with less stall and a cooler hottest node than tas and
  requests, is a strict xfail since the world's PSI is not ours' model (issue 54);
- `tas simulate`'s runs (`run_seeded`, its table): the same seed gives the same table, another
  seed another one; the same seed gives byte-identical summary.json, in-process and in a fresh
  process with another hash seed; `tas simulate` writes the summary shape, charts and a table.
Goals not met yet are strict xfails naming what limits them (see the issue notes).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tas.metrics.refreshing import default_max_age
from tas_cli.main import main
from tas_herd.placements import PlacementTracker
from tas_inmemory.scheduler import Extender
from tas_simulator.contenders import CONTENDERS, Contender, resolve
from tas_simulator.report import table
from tas_simulator.runner import ExtenderParts, ScenarioResult, build_run, in_process, run_scenario
from tas_simulator.scenario import load_scenario
from tas_simulator.seeds import run_seeded
from tests.tas_simulator.reported import REPORTED_FIGURES

#: Virtual time each named scenario is cut to for the tests (its key events happen in it).
SHORT = {
    "health-demo": 600.0,
    "psi-skewed": 480.0,
    "psi-taint-release": 900.0,
    "psi-skewed-vms": 480.0,
    "herd": 600.0,
    "metric-outage": 720.0,
    "bogus-metric": 540.0,
}


@pytest.fixture(scope="module")
def results() -> dict[str, ScenarioResult]:
    return {
        name: run_scenario(load_scenario(name).with_duration(seconds))
        for name, seconds in SHORT.items()
    }


def figures(results: dict[str, ScenarioResult], scenario: str, contender: str) -> Any:
    result = results[scenario]
    if contender in result.unavailable:
        pytest.skip(f"{contender} is unavailable here: {result.unavailable[contender]}")
    return result.results[contender].figures


@pytest.mark.parametrize("contender", list(CONTENDERS))
@pytest.mark.parametrize("scenario", list(SHORT))
def test_every_contender_runs_every_scenario_and_reports_every_figure(
    results: dict[str, ScenarioResult], scenario: str, contender: str
) -> None:
    found = figures(results, scenario, contender)
    assert found.keys() >= REPORTED_FIGURES
    assert ("herd_ratio" in found) == ("herd_ratio_by_load" in found) == (scenario == "herd")
    assert 0 <= found["work_lost"]["share"] <= 1


# psi-taint-release was a strict xfail here (herd control's estimate steered one pod to a node
# whose lagging value looked safe, 1 violating placement): with LoadAware's moves that must pay
# (issue 26) it has none on this seed, so it is a plain test again.
#: Issue 54: the world's PSI is the bursty model with per-node factors and read noise, not the
#: Erlang C curve ours predicts with. Before it (Erlang C, 15 s start-ups) these held; they are
#: strict xfails until ours' calibration restores them, so a fix shows as an XPASS.
NOT_OURS_MODEL = (
    "the world's PSI is not ours' model (issue 54): ours' estimate of a node's load, "
    "read through Erlang C from a bursty, noisy PSI, misjudges nodes"
)


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(
            name,
            marks=pytest.mark.xfail(
                strict=True,
                reason=NOT_OURS_MODEL
                + ": 1 pod placed on a node whose true PSI was above the rule's (0 before)",
            ),
        )
        if name == "psi-skewed"
        else name
        for name in SHORT
    ],
)
def test_ours_never_places_a_pod_on_a_node_violating_its_dontschedule_rules(
    results: dict[str, ScenarioResult], scenario: str
) -> None:
    assert figures(results, scenario, "ours")["violating_placements"] == 0


def test_health_demo_tas_and_ours_both_empty_the_violating_node(
    results: dict[str, ScenarioResult],
) -> None:
    for contender in ("tas", "ours"):
        evacuation = figures(results, "health-demo", contender)["evacuation_seconds"]
        assert evacuation["evacuated"] >= 1, contender
        assert evacuation["not_evacuated"] == 0, contender
    assert figures(results, "health-demo", "requests")["evacuation_seconds"]["not_evacuated"] == 1


def test_evictions_a_deschedule_rule_asked_for_are_told_from_rebalancing_moves(
    results: dict[str, ScenarioResult],
) -> None:
    """The sweep's `why_worse` reads this count: a policy obeyed is not plain harm, even when
    the node recovered before it was emptied."""
    for contender in ("tas", "ours"):
        evictions = figures(results, "health-demo", contender)["evictions"]
        assert 1 <= evictions["deschedule_rule"] <= evictions["total"], contender
    assert figures(results, "health-demo", "requests")["evictions"]["deschedule_rule"] == 0
    # psi-taint-release has no deschedule rule: every move there is LoadAware's.
    rebalancing = figures(results, "psi-taint-release", "ours")["evictions"]
    assert rebalancing["total"] > 0
    assert rebalancing["deschedule_rule"] == 0


def test_health_demo_ours_evacuates_within_one_sync_one_interval_and_the_metric_lag(
    results: dict[str, ScenarioResult],
) -> None:
    scenario = results["health-demo"].scenario
    bound = (
        scenario.sync_period
        + scenario.descheduling_interval
        + scenario.pipeline.scrape_interval
        + scenario.pipeline.delay
        + scenario.step
    )
    evacuation = figures(results, "health-demo", "ours")["evacuation_seconds"]
    assert evacuation["max"] is not None
    assert evacuation["max"] <= bound


def test_psi_taint_release_ours_beats_requests_and_evicts_gently(
    results: dict[str, ScenarioResult],
) -> None:
    ours = figures(results, "psi-taint-release", "ours")
    requests = figures(results, "psi-taint-release", "requests")
    assert ours["work_lost"]["core_seconds"] < requests["work_lost"]["core_seconds"]
    assert ours["evictions"]["max_per_pod_hour"] <= 2
    # Against the PSI profile at a short cadence: at its shipped hour it never runs in 15 min.
    if "psi-profile-60s" not in results["psi-taint-release"].unavailable:
        psi = figures(results, "psi-taint-release", "psi-profile-60s")
        assert ours["evictions"]["total"] < psi["evictions"]["total"]


def test_psi_taint_release_ours_loses_at_most_half_the_work_requests_loses(
    results: dict[str, ScenarioResult],
) -> None:
    ours = figures(results, "psi-taint-release", "ours")
    requests = figures(results, "psi-taint-release", "requests")
    assert ours["work_lost"]["core_seconds"] <= 0.5 * requests["work_lost"]["core_seconds"]


def test_metric_outage_ours_evicts_nothing_on_stale_data_and_keeps_placing(
    results: dict[str, ScenarioResult],
) -> None:
    result = results["metric-outage"]
    scenario = result.scenario
    outage = next(e for e in scenario.events if e.kind == "metric-outage")
    pipeline = scenario.pipeline
    # The newest sample before the outage was already `delay` (and up to a sync period) old
    # when it arrived; ours calls it stale once it has missed two more scrapes
    # (tas.metrics.refreshing.Cadence), and never before five sync periods.
    allowance = pipeline.delay + scenario.sync_period + 3 * pipeline.scrape_interval
    stale_from = outage.at + max(default_max_age(scenario.sync_period), allowance)
    until = outage.at + outage.lasts + scenario.pipeline.window + scenario.pipeline.delay
    times = result.results["ours"].eviction_times
    assert not [t for t in times if stale_from <= t <= until]
    assert figures(results, "metric-outage", "ours")["pending_seconds"]["p95"] <= 60


def test_bogus_metric_ours_evicts_nothing(results: dict[str, ScenarioResult]) -> None:
    assert figures(results, "bogus-metric", "ours")["evictions"]["total"] == 0


def test_bogus_metric_ours_keeps_placing_pods(results: dict[str, ScenarioResult]) -> None:
    assert figures(results, "bogus-metric", "ours")["pending_seconds"]["p95"] <= 30


def without_herd_control(parts: ExtenderParts) -> Extender:
    """Ours' extender as `tas simulate` builds it, with a recent placements' tracker that is
    told of no bind: no estimate between a bind and the sample that shows it."""
    return in_process(dataclasses.replace(parts, placements=PlacementTracker()))


def herd_figures(seed: int, *, herd_control: bool) -> Any:
    scenario = load_scenario("herd").with_duration(SHORT["herd"])
    ours = resolve("ours", scenario.contenders.get("ours"))
    assert isinstance(ours, Contender)
    if herd_control:
        run = build_run(scenario, ours, seed=seed)
    else:
        run = build_run(scenario, ours, seed=seed, extender=without_herd_control)
    for index in range(run.steps):
        run.step(index)
    return run.result().figures


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_herd_control_keeps_a_burst_from_piling_onto_the_node_that_looks_idle(seed: int) -> None:
    """What a user relies on herd control for: a burst arriving between two scrapes does not
    all go to the node the lagging metrics show idle. `herd_ratio_by_load` is the most pods of
    the burst on one node over the most a load-balanced placement puts there (1: balanced).
    Without the tracker the whole burst lands on the joined node (about 1.65); with it, that
    node takes no more than its share (0.96 on these seeds), bounded here with margin."""
    ours = herd_figures(seed, herd_control=True)
    without = herd_figures(seed, herd_control=False)
    assert ours["herd_ratio_by_load"] <= 1.15
    assert without["herd_ratio_by_load"] >= 1.5  # the scenario is a herd without the tracker
    assert ours["herd_ratio"] < 0.75 * without["herd_ratio"]
    assert ours["violating_placements"] == 0


#: Herd: the fleet runs 77 cores on 7 nodes of 16, the burst adds 50 pods of 0.4 cores; the
#: most pods of the burst on the idle node when every node ends as loaded, over the spec's
#: count-based fair share (burst / nodes).
HERD_BY_LOAD = ((70 * 1.1 + 50 * 0.4) / 8 / 0.4) / (50 / 8)


def test_herd_ours_puts_no_more_than_the_load_balanced_share_on_one_node(
    results: dict[str, ScenarioResult],
) -> None:
    """What still holds in a world whose PSI is not ours' model: no pile-up on the idle node
    beyond the load-balanced share, and no violating placement."""
    ours = figures(results, "herd", "ours")
    assert ours["herd_ratio_by_load"] <= 1.15
    assert ours["herd_ratio"] / ours["herd_ratio_by_load"] == pytest.approx(HERD_BY_LOAD, rel=0.01)
    assert ours["violating_placements"] == 0


@pytest.mark.xfail(
    strict=True,
    reason=NOT_OURS_MODEL
    + ": only the stall fails now. The idle node takes its share by load (herd ratio 4.96, 1.02"
    " of it, since PSI under tas.pressure.MIN_PSI reads as no load) and ours' hottest pressure"
    " is the lowest (0.43; tas 0.61, requests 0.44), but ours stalls 775 node-s against tas'"
    " 764 and requests' 769 (834 before the noise floor)",
)
def test_herd_ours_fills_the_idle_node_to_the_fleets_load_and_no_further(
    results: dict[str, ScenarioResult],
) -> None:
    """Herd control's promise (docs/recent-placements.md): the idle node that joined takes the
    burst until its estimated load reaches the others', then the burst spreads. By load, not by
    count: the fleet runs 77 cores on 7 nodes of 16, the burst adds 50 pods of 0.4 cores, so
    the idle node is as loaded as the rest at about 30 of the 50 pods (12.1 cores on each of
    8 nodes): 4.85 times the spec's count-based fair share (burst / nodes). The whole burst on
    it would be 8 times; spreading by count would leave it idle while the others stall.
    `herd_ratio_by_load` divides by that load-balanced share (`tas_simulator.fair_share`)."""
    ours = figures(results, "herd", "ours")
    by_load = HERD_BY_LOAD
    assert 0.75 * by_load <= ours["herd_ratio"] <= 1.15 * by_load
    assert ours["herd_ratio"] / ours["herd_ratio_by_load"] == pytest.approx(by_load, rel=0.01)
    assert ours["violating_placements"] == 0
    for other in ("tas", "requests"):
        theirs = figures(results, "herd", other)
        assert ours["stall"] < theirs["stall"], other
        assert ours["hottest_pressure"] <= theirs["hottest_pressure"], other


def test_tas_simulate_gives_the_same_table_for_the_same_seed_and_another_for_another(
    tmp_path: Path,
) -> None:
    """Through the path `tas simulate` takes (`run_seeded`, then `table`), every contender and
    reference row. The table's first line names the seed, so the seeds must differ below it."""
    scenario = load_scenario("psi-skewed").with_duration(SHORT["psi-skewed"])

    def simulate(seed: int) -> list[str]:
        (result,) = run_seeded(
            [scenario],
            contenders=list(CONTENDERS),
            seeds=1,
            base_seed=seed,
            workers=1,
            dask_address=None,
            log_path=tmp_path / "simulate.log",
            progress=lambda done, total: None,
        )
        return table(result).splitlines()

    first = simulate(scenario.seed)
    assert simulate(scenario.seed) == first
    other = simulate(scenario.seed + 1)
    assert other[0] != first[0]
    assert other[1:] != first[1:]


def test_the_same_seed_gives_the_same_bytes_in_a_fresh_process(tmp_path: Path) -> None:
    arguments = [
        "simulate", "health-demo", "--duration", "4m", "--seeds", "2", "--workers", "1",
        "--no-charts",
    ]  # fmt: skip
    assert main([*arguments, "--out", str(tmp_path / "here")]) == 0
    out = tmp_path / "there"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    command = [sys.executable, "-m", "tas_cli", *arguments, "--out", str(out)]
    subprocess.run(command, check=True, env=env, capture_output=True, timeout=120)
    assert (out / "summary.json").read_bytes() == (tmp_path / "here" / "summary.json").read_bytes()


def test_tas_simulate_writes_the_summary_charts_and_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["simulate", "herd", "--duration", "9m", "--contenders", "requests,ours",
         "--seed", "4", "--seeds", "1", "--out", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    document = json.loads((tmp_path / "summary.json").read_text())
    contenders = document["scenarios"]["herd"]["contenders"]
    assert set(contenders) == {"requests", "ours"}
    assert contenders["ours"]["evictions"].keys() == {
        "total",
        "max_per_pod_hour",
        "deschedule_rule",
    }
    for chart in ("herd-nodes.png", "herd-spread.png"):
        assert (tmp_path / chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "herd (seed 4, 9 min)" in printed
    # The herd column, in one of the table's blocks of columns.
    assert any(
        "herd" in line.split() for line in printed.splitlines() if line.startswith("contender")
    )
