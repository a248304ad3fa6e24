"""A world PSI that ours does not share (issue 46): `pressureModel`.

Covered:
- the error function the model needs matches the standard library's;
- a grid of nodes whose cores are known ahead (the hindsight placement's) gives every cell the
  pressure `pressures` gives, to the bit;
- `bursty`: nothing at no demand, never falling with demand, 1 once the demand reaches the
  cores, another curve than Erlang C (above it at 85% on 16 cores), and no steeper than 1 per
  core on nodes of 8 cores or more; on smaller ones it may be, and the limit counts it at 1
  per core (losing the demand instead), so its bound on stall + work lost holds for any curve;
- each node's factor is the same for a node of that name on that seed, differs between nodes,
  and is 1 under Erlang C;
- the measurement noise is reproducible, near zero on average, kept within 0..1, and absent
  when the noise is 0; a run's noise drawn by blocks of steps is the same reading;
- a scenario's `pressureModel` is read; one that names none gets the bursty model with its
  per-node factors and noise (issue 54), and Erlang C only where it is named (without noise
  unless given); bad ones are refused with every problem listed;
- the world reports the model's pressure (not Erlang C's) as the node's stall, and the
  pipeline reads it with the noise; ours still predicts with Erlang C; the live page shows the
  noisy reading, as a cluster would;
- the fluid limit stays below every contender on drawn large-slow scenarios (bursty);
- both shipped families draw a bursty model for every scenario;
- the world's Erlang C (for a scenario that names it) is its own code, and agrees with ours'
  predictor to the table's precision.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from tas.types import NodeName
from tas_inmemory.workload import cpu_pressures
from tas_simulator.contenders import Contender, resolve
from tas_simulator.family import FAMILIES, draw_scenario, load_family
from tas_simulator.limit import _envelope, _StallCurve
from tas_simulator.live import ScenarioPage
from tas_simulator.pressure_model import (
    Cells,
    NodeCurves,
    ReadNoise,
    erfc,
    measured,
    node_biases,
    pressures,
)
from tas_simulator.runner import build_run
from tas_simulator.scenario import PressureModel, PressureModelKind, ScenarioError
from tests.tas_simulator.limits import ROWS, assert_row_not_below_the_limit, cut
from tests.tas_simulator.worlds import SteppedWorld, health_pair

BURSTY = PressureModel(PressureModelKind.BURSTY, burstiness=1.0, node_bias=0.3, noise=0.05)


def _curve(model: PressureModel, cores: float, bias: float = 1.0) -> tuple[Any, Any]:
    demand = np.linspace(0.0, 1.2 * cores, 4001)
    return demand, pressures(model, demand, np.full_like(demand, cores), np.full_like(demand, bias))


def test_erfc_matches_the_standard_library() -> None:
    x = np.linspace(-5.0, 5.0, 2001)
    assert np.abs(erfc(x) - np.array([math.erfc(v) for v in x])).max() < 2e-7


@pytest.mark.parametrize("cores", [1.0, 4.0, 16.0, 64.0])
def test_a_bursty_node_reads_nothing_idle_more_with_demand_and_1_when_full(cores: float) -> None:
    demand, pressure = _curve(BURSTY, cores)
    assert pressure[0] == 0.0
    assert np.diff(pressure).min() >= -1e-9
    assert (pressure[demand >= cores] == 1.0).all()


def test_the_bursty_curve_is_not_erlang_c() -> None:
    cores = np.full(3, 16.0)
    demand = np.array([0.5, 0.7, 0.85]) * 16.0
    bursty = pressures(BURSTY, demand, cores, np.ones(3))
    erlang = cpu_pressures(demand, cores)
    assert bursty[2] > erlang[2] + 0.15
    # Erlang C where a scenario names it, whatever the factors.
    erlang_c = PressureModel.erlang_c()
    assert list(pressures(erlang_c, demand, cores, np.full(3, 3.0))) == list(erlang)


@pytest.mark.parametrize("model", [BURSTY, PressureModel.erlang_c()], ids=["bursty", "erlang-c"])
def test_a_grid_of_known_nodes_gives_every_cell_its_pressure_to_the_bit(
    model: PressureModel,
) -> None:
    # The hindsight placement weighs its cells through `NodeCurves`: its figures are the
    # world's curve only if each cell is what `pressures` gives, bit for bit (failed nodes,
    # idle and overloaded cells included).
    rng = np.random.default_rng(3)
    cores = rng.choice([0.0, 1.0, 4.0, 16.0, 96.0], size=(6, 50))
    bias = np.exp(0.3 * rng.normal(size=6))
    demand = cores * rng.uniform(0.0, 1.3, size=cores.shape)
    demand[:, ::7] = 0.0
    biases = np.broadcast_to(bias[:, np.newaxis], cores.shape)
    curves = NodeCurves(model, cores, bias)
    rows = np.array([4, 0, 2])
    every: list[Cells] = [
        slice(None),
        np.ix_(rows, np.array([1, 5, 6, 30])),
        (rows, slice(10, 40)),
        (3, np.array([2, 9, 14])),
    ]
    for cells in every:
        want = pressures(model, demand[cells], cores[cells], biases[cells])
        assert curves.at(demand[cells], cells).tobytes() == want.tobytes()


@pytest.mark.parametrize("cores", [8.0, 16.0, 32.0, 128.0])
@pytest.mark.parametrize("burstiness", [0.0, 0.5, 2.0, 5.0])
@pytest.mark.parametrize("bias", [0.1, 1.0, 5.0])
def test_a_core_of_load_raises_a_bursty_nodes_pressure_by_at_most_1(
    cores: float, burstiness: float, bias: float
) -> None:
    model = PressureModel(PressureModelKind.BURSTY, burstiness=burstiness)
    demand, pressure = _curve(model, cores, bias)
    under = demand < cores
    assert (np.diff(pressure[under]) / np.diff(demand[under])).max() <= 1.0


def test_the_limit_counts_a_curve_steeper_than_losing_the_demand_at_1_per_core() -> None:
    model = PressureModel(PressureModelKind.BURSTY, burstiness=5.0)
    slopes, _ = _envelope(2.0, 3.0, model)
    assert slopes.max() > 1.5  # a 2-core node this bursty is steeper than 1 per core
    curve = _StallCurve([(2.0, 3.0), (16.0, 1.0)], model)
    load = np.linspace(0.0, 18.0, 721)
    least = np.array([curve.least(x) for x in load])
    assert (np.diff(least) / np.diff(load)).max() <= 1.0 + 1e-9


def test_each_nodes_factor_is_its_own_and_the_same_every_run() -> None:
    names = [f"node-{i}" for i in range(200)]
    biases = node_biases(BURSTY, 7, names)
    assert list(node_biases(BURSTY, 7, names[5:7])) == list(biases[5:7])
    assert len(set(biases)) == len(names)
    # Log-normal with sigma 0.3: its log has that spread, around 0.
    assert abs(float(np.log(biases).mean())) < 0.1
    assert 0.2 < float(np.log(biases).std()) < 0.4
    assert list(node_biases(BURSTY, 8, names[:3])) != list(biases[:3])
    assert list(node_biases(PressureModel.erlang_c(), 7, names[:3])) == [1.0, 1.0, 1.0]


def test_the_reading_is_the_pressure_with_noise_reproducible_and_within_0_and_1() -> None:
    values = np.full(4000, 0.5)
    read = measured(BURSTY, values, 3, 10)
    assert list(read) == list(measured(BURSTY, values, 3, 10))
    assert list(read) != list(measured(BURSTY, values, 3, 11))
    assert abs(float(read.mean()) - 0.5) < 0.005
    assert 0.045 < float(read.std()) < 0.055
    edges = measured(BURSTY, np.array([0.0, 1.0] * 100), 3, 10)
    assert edges.min() >= 0.0
    assert edges.max() <= 1.0
    quiet = PressureModel(PressureModelKind.BURSTY, noise=0.0)
    assert measured(quiet, values, 3, 10) is values


def test_a_runs_reading_drawn_by_blocks_of_steps_is_the_reading_of_each_step() -> None:
    # A run draws its read noise for many steps at once: the same reading, bit for bit, across
    # a block's end and when nodes join (the figures of every seed depend on it).
    noise = ReadNoise(BURSTY, 5, block=4)
    for step, count in [(0, 3), (1, 3), (3, 3), (4, 3), (9, 3), (10, 5), (2, 5)]:
        values = np.linspace(0.1, 0.9, count)
        assert list(noise.measured(values, step)) == list(measured(BURSTY, values, 5, step))


def test_a_scenarios_pressure_model_is_read() -> None:
    scenario = health_pair(
        [], pressureModel={"kind": "bursty", "burstiness": 1.5, "nodeBias": 0.2, "noise": 0.03}
    )
    assert scenario.pressure_model == PressureModel(PressureModelKind.BURSTY, 1.5, 0.2, 0.03)


def test_a_scenario_that_names_no_model_gets_bursty_nodes_read_with_noise() -> None:
    """Issue 54: the world ours is judged in is not the curve ours predicts with, unless a
    scenario asks for that curve by name."""
    default = health_pair([]).pressure_model
    assert default.kind is PressureModelKind.BURSTY
    assert (default.burstiness, default.node_bias, default.noise) == (1.0, 0.3, 0.03)
    assert health_pair([], pressureModel={"kind": "bursty"}).pressure_model == default
    named = health_pair([], pressureModel={"kind": "erlang-c"}).pressure_model
    assert named == PressureModel(PressureModelKind.ERLANG_C, node_bias=0.0, noise=0.0)
    noisy = health_pair([], pressureModel={"kind": "erlang-c", "noise": 0.02}).pressure_model
    assert noisy.noise == 0.02


def test_bad_pressure_models_are_refused_with_every_problem_listed() -> None:
    with pytest.raises(ScenarioError) as error:
        health_pair([], pressureModel={"kind": "gaussian", "noise": -1})
    problems = "\n".join(error.value.problems)
    assert "pressureModel.kind" in problems
    assert "pressureModel.noise" in problems
    with pytest.raises(ScenarioError) as error:
        health_pair([], pressureModel={"kind": "erlang-c", "burstiness": 2.0})
    assert list(error.value.problems) == ["pressureModel.burstiness: only for kind: bursty"]


def test_the_world_stalls_by_the_model_and_the_pipeline_reads_it_with_noise() -> None:
    """Node a: 4 cores, two pods of 2: full. Node b: 8 cores, one pod of 1."""
    scenario = health_pair([], pressureModel={"kind": "bursty", "nodeBias": 0.3, "noise": 0.05})
    loop = SteppedWorld(scenario, lambda pod: "b" if pod.startswith("db-") else "a")
    loop.until(60)
    state = loop.states[60.0]
    bias = node_biases(scenario.pressure_model, 1, ["a", "b"])
    expected = pressures(scenario.pressure_model, state.demand, state.cores, bias)
    assert list(state.pressure) == pytest.approx(list(expected))
    assert state.pressure[0] == 1.0
    assert state.pressure[1] != pytest.approx(cpu_pressures(state.demand, state.cores)[1])
    assert state.measured_pressure[1] != state.pressure[1]
    assert abs(state.measured_pressure[1] - state.pressure[1]) < 0.3


@pytest.mark.parametrize("family", ["default", "large-slow"])
def test_every_shipped_family_draws_bursty_nodes_over_a_range(family: str) -> None:
    drawn = [draw_scenario(load_family(family), i)["pressureModel"] for i in range(40)]
    assert {model["kind"] for model in drawn} == {"bursty"}
    assert min(m["burstiness"] for m in drawn) < 1.0 < max(m["burstiness"] for m in drawn)
    assert all(0.1 <= m["nodeBias"] <= 0.5 and 0.02 <= m["noise"] <= 0.05 for m in drawn)


def test_the_worlds_erlang_c_is_its_own_and_agrees_with_ours() -> None:
    """A scenario that names Erlang C gets the world's own table, which agrees with the
    predictor ours uses (`tas.pressure`) without sharing its code."""
    import tas_inmemory.workload
    from tas.pressure import erlang_c as ours

    assert tas_inmemory.workload.erlang_c is not ours
    for servers in (1, 2, 8, 16, 64):
        for load in np.linspace(0.0, 1.2 * servers, 49):
            assert tas_inmemory.workload.erlang_c(servers, float(load)) == pytest.approx(
                ours(servers, float(load)), abs=1e-12
            )


@pytest.mark.parametrize("row", ROWS)
@pytest.mark.parametrize("index", range(2))
def test_no_contender_beats_the_limit_in_drawn_large_slow_scenarios(index: int, row: str) -> None:
    from tas_simulator.scenario import read_scenario

    family = load_family("large-slow")
    scenario = cut(read_scenario(draw_scenario(family, index), base=FAMILIES), 900.0)
    assert scenario.pressure_model.kind is PressureModelKind.BURSTY
    assert_row_not_below_the_limit(scenario, row)


def test_the_live_page_shows_what_node_exporter_reads() -> None:
    """`make run --scenario`'s node cards show the reading a cluster's node-exporter gives,
    noise included, not the model's true curve."""
    scenario = health_pair([], pressureModel={"kind": "bursty", "nodeBias": 0.3, "noise": 0.05})
    contender = resolve("ours", scenario.contenders.get("ours"))
    assert isinstance(contender, Contender)
    page = ScenarioPage(
        build_run(scenario, contender, seed=1), speed=1.0, seed=1, finished=lambda: False
    )
    loop = SteppedWorld(scenario, lambda pod: "b" if pod.startswith("db-") else "a")
    loop.until(60)
    state = loop.states[60.0]
    page.watch(state, scenario.step)
    shown = page.telemetry()
    assert shown is not None
    assert shown.nodes[NodeName("b")].cpu_pressure == float(state.measured_pressure[1])
    assert shown.nodes[NodeName("b")].cpu_pressure != float(state.pressure[1])
