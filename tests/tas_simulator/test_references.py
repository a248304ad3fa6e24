"""The reference rows of every comparison (issue 23): `limit` and `clairvoyant`.

Covered:
- the limit is the fluid bound: on a hand-computed scenario its work lost is the demand above
  total capacity, plus the demand above the nodes a pod's constraints allow, plus the start-up
  of pods a scale event creates; where a scenario names Erlang C, its stall is Erlang C at
  equalized utilization on identical nodes below saturation;
- no contender beats the limit on work lost, nor on stall and work lost together (stall alone
  only by losing more work: an overloaded node stalls no more than a full one), on any seed of
  any named scenario or of scenarios drawn from the default family (a contender below it is a
  bug in the model or in the bound); that rests on a core of load raising no node's pressure
  by more than 1; at scale (scale-500) every contender also reports every figure, and ours
  places no pod on a node that violates its dontschedule rules;
- the clairvoyant run is ours' code: on a scenario whose pipeline has no lag and no faults, it
  gives ours' figures exactly; it reads through an outage and a bogus exporter;
- the share of the achievable gain: (requests - row) / (requests - limit), none where there is
  nothing to gain.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

from tas.types import MetricName
from tas_inmemory.workload import cpu_pressure, cpu_pressures
from tas_simulator.clock import VirtualClock
from tas_simulator.contenders import CONTENDERS, choose_contenders
from tas_simulator.family import FAMILIES, draw_scenario, load_family
from tas_simulator.jobs import CLAIRVOYANT, REFERENCES, Job, run_job
from tas_simulator.limit import fluid_limit
from tas_simulator.pipeline import ModelSource, ScrapeStore, perfect
from tas_simulator.scenario import (
    SCENARIOS,
    EventKind,
    Scenario,
    load_scenario,
    named_scenarios,
    read_scenario,
)
from tas_simulator.seeds import share_of_gain
from tas_simulator.world import CPU_UTILIZATION, World
from tests.tas_simulator.limits import (
    ROWS,
    assert_row_not_below_the_limit,
    cut,
)
from tests.tas_simulator.reported import REPORTED_FIGURES
from tests.tas_simulator.worlds import fluid_pair

#: Floating-point slack on sums of thousands of steps.
MEMORY = {"profile": "steady", "value": "100Mi"}


def test_the_limit_loses_the_demand_above_total_capacity() -> None:
    figures = fluid_limit(fluid_pair(), seed=3)
    # 10 cores wanted, 8 cores in all, for the 9 minutes after the warm-up.
    assert figures["work_lost"]["core_seconds"] == pytest.approx(2.0 * 540)
    assert figures["work_lost"]["share"] == pytest.approx(0.2)
    # Every node full: PSI 1 on both.
    assert figures["stall"] == pytest.approx(2.0 * 540)


def test_the_limit_loses_the_demand_above_the_nodes_a_pods_constraints_allow() -> None:
    scenario = fluid_pair(
        workloads=[
            {
                "name": "pinned",
                "replicas": 3,
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "nodeSelector": {"zone": "x"},
                "usage": {
                    "cpu": {"profile": "steady", "value": 2},
                    "memory": {"profile": "steady", "value": "100Mi"},
                },
            },
            {
                "name": "free",
                "replicas": 1,
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "usage": {
                    "cpu": {"profile": "steady", "value": 1},
                    "memory": {"profile": "steady", "value": "100Mi"},
                },
            },
        ]
    )
    figures = fluid_limit(scenario, seed=3)
    # 7 cores fit in 8, but the pinned 6 cores may only use node a's 4.
    assert figures["work_lost"]["core_seconds"] == pytest.approx(2.0 * 540)


def test_the_limit_counts_the_start_up_of_pods_a_scale_event_creates() -> None:
    scenario = fluid_pair(
        workloads=[
            {
                "name": "light",
                "replicas": 1,
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "usage": {
                    "cpu": {"profile": "steady", "value": 1},
                    "memory": {"profile": "steady", "value": "100Mi"},
                },
            }
        ],
        events=[{"at": "5m", "scale": {"workload": "light", "replicas": 3}}],
    )
    figures = fluid_limit(scenario, seed=3)
    # Two new pods of 1 core wait out the 30 s start-up; nothing else is lost.
    assert figures["work_lost"]["displaced"] == pytest.approx(2.0 * 30)
    assert figures["work_lost"]["stalled"] == 0.0


def test_the_limits_stall_on_identical_nodes_is_erlang_c_at_equalized_utilization() -> None:
    # A scenario that names Erlang C (the default world is bursty, each node its own factor).
    scenario = fluid_pair(
        pressureModel={"kind": "erlang-c"},
        workloads=[
            {
                "name": "half",
                "replicas": 4,
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "usage": {
                    "cpu": {"profile": "steady", "value": 1},
                    "memory": {"profile": "steady", "value": "100Mi"},
                },
            }
        ],
    )
    figures = fluid_limit(scenario, seed=3)
    assert figures["work_lost"]["core_seconds"] == 0.0
    # 4 cores over two 4-core nodes: 2 each, 50% (below the curve's inflection).
    assert figures["stall"] == pytest.approx(2 * cpu_pressure(2.0, 4.0) * 540, rel=1e-3)


# ---------------------------------------------------------------------- never beaten


#: The named scenario at scale: 500 nodes, 10,000 pods (its own test below).
SCALE = "scale-500"


@pytest.mark.parametrize("row", ROWS)
@pytest.mark.parametrize("name", sorted(set(named_scenarios()) - {SCALE}))
def test_no_contender_beats_the_limit_in_a_named_scenario(name: str, row: str) -> None:
    # Cut short to keep the suite quick, past their first events.
    assert_row_not_below_the_limit(cut(load_scenario(name), 1500.0), row)


@pytest.mark.parametrize("row", ROWS)
def test_every_row_runs_500_nodes_within_the_limit_and_reports_every_figure(row: str) -> None:
    # One run per row serves all of it (test_named_scenarios leaves scale-500 to this test):
    # placing its 10,000 pods is most of a run's time. Cut past its (halved) warm-up.
    figures = assert_row_not_below_the_limit(cut(load_scenario(SCALE), 600.0), row)
    if row in CONTENDERS:
        assert figures.keys() >= REPORTED_FIGURES
        assert "herd_ratio" not in figures  # no burst event here
        assert 0 <= figures["work_lost"]["share"] <= 1
    if row == "ours":
        assert figures["violating_placements"] == 0


@functools.cache
def _drawn(index: int) -> Scenario:
    return cut(read_scenario(draw_scenario(load_family("default"), index), base=FAMILIES), 1200.0)


@pytest.mark.parametrize("row", ROWS)
@pytest.mark.parametrize("index", range(4))
def test_no_contender_beats_the_limit_in_drawn_scenarios(index: int, row: str) -> None:
    assert_row_not_below_the_limit(_drawn(index), row)


@pytest.mark.parametrize("cores", [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 64.0, 128.0])
def test_a_core_of_load_raises_no_nodes_pressure_by_more_than_1(cores: float) -> None:
    load = np.linspace(0.0, cores, 4001)
    pressure = cpu_pressures(load, np.full_like(load, cores))
    assert (np.diff(pressure) / np.diff(load)).max() <= 1.0 + 1e-9


# ----------------------------------------------------------------------- clairvoyant


def test_the_references_are_not_contenders() -> None:
    assert not set(REFERENCES) & set(CONTENDERS)
    for reference in REFERENCES:
        with pytest.raises(ValueError, match=reference):
            choose_contenders(reference)


def test_clairvoyant_is_ours_when_the_pipeline_has_no_lag() -> None:
    scenario = load_scenario("psi-skewed").with_duration(900.0)
    assert not any(
        e.kind in (EventKind.METRIC_OUTAGE, EventKind.BOGUS_METRIC) for e in scenario.events
    )
    lagless = dataclasses.replace(scenario, pipeline=perfect(scenario.step))
    ours = run_job(Job(lagless, "ours", 4))
    assert ours.figures is not None
    assert run_job(Job(lagless, CLAIRVOYANT, 4)).figures == ours.figures
    # Whatever the scenario's pipeline, clairvoyant reads through it...
    assert run_job(Job(scenario, CLAIRVOYANT, 4)).figures == ours.figures
    # ...where ours meets its 15 s scrapes and 1-minute window, and decides otherwise.
    assert run_job(Job(scenario, "ours", 4)).figures != ours.figures


def test_clairvoyant_reads_through_outages_and_bogus_values() -> None:
    scenario = load_scenario("metric-outage")
    clock = VirtualClock()
    world = World(scenario, clock=clock, seed=1)
    store = ScrapeStore(world, perfect(scenario.step))
    for t in (0.0, scenario.step):
        clock.advance_to(t)
        store.integrate(world.model(t), scenario.step)
        store.maybe_scrape(t)
    world.outages.append((0.0, 1e9))
    world.bogus.append((0.0, 1e9, str(CPU_UTILIZATION), 99.0, frozenset()))
    names = frozenset({MetricName(CPU_UTILIZATION)})
    assert ModelSource(store, clock).fetch(names).errors
    true = ModelSource(store, clock, faults=False).fetch(names)
    assert not true.errors
    values = [s.value for s in true.columns[MetricName(CPU_UTILIZATION)].values()]
    assert values
    assert all(0.0 <= v <= 1.0 for v in values)


# ------------------------------------------------------------------- share of the gain


@pytest.mark.parametrize(
    ("requests", "value", "limit", "share"),
    [
        pytest.param(100.0, 100.0, 0.0, 0.0, id="no-better-than-requests"),
        pytest.param(100.0, 0.0, 0.0, 1.0, id="at-the-limit"),
        pytest.param(100.0, 60.0, 20.0, 0.5, id="half-way"),
        pytest.param(100.0, 120.0, 20.0, -0.25, id="worse-than-requests"),
        pytest.param(10.5, 10.0, 10.0, None, id="nothing-to-gain"),
    ],
)
def test_the_share_of_the_achievable_gain(
    requests: float, value: float, limit: float, share: float | None
) -> None:
    found = share_of_gain(requests, value, limit)
    assert found == (None if share is None else pytest.approx(share))


# ------------------------------------------------------ avoidable and unavoidable placements


def _health_scenario(health: dict[str, float]) -> Scenario:
    """Two nodes with the given health_metric (1: no new pods, TAS's demo policy), and six
    replicas of the demo app placed by kube-scheduler on requests, blind to the policy."""
    return read_scenario(
        {
            "name": "health",
            "duration": "2m",
            "step": "10s",
            "warmup": "0s",
            "seed": 3,
            "nodes": [
                {"name": name, "cpu": 4, "memory": "16Gi", "metrics": {"health_metric": value}}
                for name, value in health.items()
            ],
            "workloads": [
                {
                    "name": "demo-app",
                    "namespace": "health-metric-demo",
                    "replicas": 6,
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                    "labels": {"telemetry-policy": "demo-policy"},
                    "usage": {"cpu": {"profile": "steady", "value": "50m"}, "memory": MEMORY},
                }
            ],
            "policies": [{"file": "policies/health-policy.yaml"}],
        },
        base=SCENARIOS,
    )


@pytest.mark.parametrize(
    ("health", "unavoidable"),
    [
        pytest.param({"a": 1.0, "b": 0.0}, False, id="one-node-fine"),
        pytest.param({"a": 1.0, "b": 1.0}, True, id="every-node-violating"),
    ],
)
def test_a_violating_placement_is_unavoidable_only_when_every_fitting_node_violated(
    health: dict[str, float], unavoidable: bool
) -> None:
    figures = run_job(Job(_health_scenario(health), "requests", 3)).figures
    assert figures is not None
    assert figures["violating_placements"] > 0
    expected = figures["violating_placements"] if unavoidable else 0
    assert figures["unavoidable_placements"] == expected
