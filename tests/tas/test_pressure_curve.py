"""Each node's pressure curve, learned online (tas/calibration/curve.py), and the observed delays
(tas/calibration/delays.py).

Covered:
- the fit recovers curves from other families than its own (the Sakasegawa approximation of a
  bursty node's waiting probability, a logistic), with noise, within a stated tolerance;
- the fallback: the shared model until `min_samples` informative samples, and it says so;
- hostile input stays bounded and raises nothing: NaN, inf, negative, PSI without
  utilization, a node whose samples stop (aged out), a node that flips between two curves;
- memory: a fixed ring per node, and nodes that leave are forgotten;
- the observed delays: a high percentile of a bounded ring, and a window within its limits.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from tas.calibration.curve import (
    MAX_SERVERS_FACTOR,
    CurveLearner,
    NodeCurve,
    family_pressure,
    servers_for,
)
from tas.calibration.delays import DelayRing, follow_window
from tas.pressure import NodeLoad, load_for_pressure, pressure, servers_of
from tas.types import NodeName

NODE = NodeName("node-a")
CORES = 8.0
#: How far the fitted curve may be from the true one, in PSI (0..1), over the utilizations
#: the samples covered. (Whole servers: between 1 and 2 the rounding alone costs up to 0.1.)
TOLERANCE = 0.06
UTILIZATIONS = [0.3 + 0.05 * i for i in range(14)]  # 0.30 .. 0.95


def sakasegawa(servers: float, utilization: float) -> float:
    """Sakasegawa's approximation of the waiting probability of s servers (not Erlang C)."""
    exponent = math.sqrt(2 * (servers + 1)) - 1
    return float(utilization**exponent)


def feed(
    learner: CurveLearner,
    truth: Callable[[float], float],
    *,
    count: int = 40,
    noise: float = 0.1,
    seed: int = 1,
    node: NodeName = NODE,
    start: float = 0.0,
) -> None:
    rng = random.Random(seed)
    for t in range(count):
        u = rng.uniform(0.3, 0.95)
        psi = truth(u) * (1 + rng.gauss(0, noise))
        learner.observe(node, cores=CORES, utilization=u, psi=psi, time=start + t)


def worst_error(curve: NodeCurve, truth: Callable[[float], float]) -> float:
    return max(abs(family_pressure(curve.servers, u) - truth(u)) for u in UTILIZATIONS)


@pytest.mark.parametrize("servers", [2, 3, 5, 8, 16], ids=lambda s: f"{s}-servers")
def test_the_fit_recovers_a_bursty_node_s_curve_within_the_tolerance(servers: float) -> None:
    learner = CurveLearner()
    feed(learner, lambda u: sakasegawa(servers, u))
    curve = learner.curve(NODE, CORES)
    assert not curve.fallback
    assert worst_error(curve, lambda u: sakasegawa(servers, u)) <= TOLERANCE


@pytest.mark.parametrize(
    ("middle", "steepness"), [(0.5, 6), (0.85, 25)], ids=["gentle", "late-knee"]
)
def test_on_a_logistic_curve_the_fit_is_closer_than_the_shared_model(
    middle: float, steepness: float
) -> None:
    def truth(u: float) -> float:
        return 1 / (1 + math.exp(-steepness * (u - middle)))

    learner = CurveLearner()
    feed(learner, truth, noise=0.05)
    curve = learner.curve(NODE, CORES)
    fitted = sum(abs(family_pressure(curve.servers, u) - truth(u)) for u in UTILIZATIONS)
    shared = sum(abs(pressure(u * CORES, CORES) - truth(u)) for u in UTILIZATIONS)
    assert fitted < shared


def test_the_shared_model_stands_until_enough_samples_and_says_so() -> None:
    learner = CurveLearner(min_samples=8)
    feed(learner, lambda u: sakasegawa(2, u), count=7)
    early = learner.curve(NODE, CORES)
    assert (early.fallback, early.servers, early.samples) == (True, servers_of(CORES), 7)
    assert early.override == 0  # the predictions use the shared model
    feed(learner, lambda u: sakasegawa(2, u), count=1, start=100)
    assert not learner.curve(NODE, CORES).fallback


def test_a_node_with_no_samples_is_on_the_fallback() -> None:
    curve = CurveLearner().curve(NODE, CORES)
    assert curve == NodeCurve(servers=8, samples=0, fallback=True)


def test_on_the_shared_model_s_own_samples_the_fit_is_the_node_s_cores() -> None:
    learner = CurveLearner()
    feed(learner, lambda u: pressure(u * CORES, CORES), noise=0.0)
    assert learner.curve(NODE, CORES).servers == 8


@pytest.mark.parametrize(
    ("utilization", "psi"),
    [
        (math.nan, 0.5),
        (0.5, math.nan),
        (math.inf, 0.5),
        (0.5, math.inf),
        (-0.5, 0.5),
        (0.5, -0.5),
        (7.0, 0.5),
        (0.5, 3.0),
        (-math.inf, -math.inf),
    ],
    ids=repr,
)
def test_hostile_samples_are_ignored(utilization: float, psi: float) -> None:
    learner = CurveLearner(min_samples=1)
    learner.observe(NODE, cores=CORES, utilization=utilization, psi=psi, time=1.0)
    assert learner.curve(NODE, CORES).samples == 0


@pytest.mark.parametrize("cores", [math.nan, math.inf, -4.0, 0.0], ids=repr)
def test_a_node_without_cores_learns_nothing(cores: float) -> None:
    learner = CurveLearner(min_samples=1)
    learner.observe(NODE, cores=cores, utilization=0.5, psi=0.3, time=1.0)
    assert len(learner) == 0
    assert learner.curve(NODE, cores).fallback


def test_psi_without_utilization_is_not_a_sample() -> None:
    learner = CurveLearner(min_samples=1)
    learner.observe_columns({}, {NODE: 0.4}, cores={NODE: CORES}, now=1.0)
    assert len(learner) == 0


def test_the_fit_stays_within_its_bounds_whatever_the_samples() -> None:
    rng = random.Random(3)
    learner = CurveLearner(min_samples=1)
    for t in range(500):
        u, psi = rng.uniform(-2, 3), rng.uniform(-2, 3)
        learner.observe(NODE, cores=CORES, utilization=u, psi=psi, time=float(t))
        curve = learner.curve(NODE, CORES)
        assert 1 <= curve.servers <= MAX_SERVERS_FACTOR * CORES
        load = NodeLoad.measured(CORES, utilization=0.5, psi=0.5, servers=curve.override)
        assert 0.0 <= load.pressure <= 1.0
        assert math.isfinite(load.stalled)


def test_a_node_that_flips_between_two_curves_is_fitted_between_them() -> None:
    learner = CurveLearner()
    rng = random.Random(5)
    for t in range(200):
        servers = 2 if (t // 5) % 2 else 12
        u = rng.uniform(0.3, 0.95)
        learner.observe(NODE, cores=CORES, utilization=u, psi=sakasegawa(servers, u), time=float(t))
        curve = learner.curve(NODE, CORES)
        if not curve.fallback:
            assert 1 <= curve.servers <= 16


def test_a_node_whose_samples_stop_is_aged_out_and_forgotten() -> None:
    learner = CurveLearner(max_age=600)
    feed(learner, lambda u: sakasegawa(2, u))
    assert not learner.curve(NODE, CORES).fallback
    other = NodeName("node-b")
    feed(learner, lambda u: sakasegawa(2, u), node=other, start=1000.0)
    learner.retain({NODE, other})
    assert len(learner) == 1  # node-a's newest sample is older than 600 s
    assert learner.curve(NODE, CORES).fallback


def test_some_samples_aging_out_refits_on_the_rest() -> None:
    learner = CurveLearner(max_age=100, min_samples=8)
    feed(learner, lambda u: sakasegawa(2, u), count=20)  # t 0..19
    assert learner.curve(NODE, CORES).samples == 20
    feed(learner, lambda u: sakasegawa(2, u), count=5, start=110.0, seed=2)  # t 110..114
    learner.retain({NODE})
    curve = learner.curve(NODE, CORES)
    assert curve.samples == 5 + 6  # t >= 14 and the five new ones
    assert not curve.fallback


def test_memory_is_one_fixed_ring_per_node_and_nodes_that_leave_are_forgotten() -> None:
    learner = CurveLearner(window=16)
    nodes = [NodeName(f"node-{i}") for i in range(10)]
    for node in nodes:
        feed(learner, lambda u: sakasegawa(4, u), count=1000, node=node)
    assert all(learner.curve(n, CORES).samples == 16 for n in nodes)
    learner.retain(nodes[:3])
    assert len(learner) == 3
    assert learner.curves(dict.fromkeys(nodes, CORES)).keys() == set(nodes[:3])


def test_the_same_sample_read_twice_counts_once() -> None:
    learner = CurveLearner(min_samples=1)
    for _ in range(5):
        learner.observe(NODE, cores=CORES, utilization=0.6, psi=0.3, time=10.0)
    assert learner.curve(NODE, CORES).samples == 1


def test_the_inversion_passes_through_its_sample() -> None:
    for u, psi in [(0.5, 0.3), (0.3, 0.01), (0.95, 0.9), (0.7, 0.2)]:
        servers = servers_for(u, psi, most=16)
        assert family_pressure(servers, u) == pytest.approx(psi, abs=0.01)


def test_a_learned_curve_reads_the_node_s_load_back_through_itself() -> None:
    # A bursty node (2 effective servers on 8 cores) at 50% stalls 1/3 of the time: the shared
    # model would read a load of about 5.9 cores from that PSI; its own curve reads 4.
    psi = pressure(4.0, CORES, servers=2)
    assert load_for_pressure(psi, CORES, servers=2) == pytest.approx(4.0, rel=1e-6)
    assert load_for_pressure(psi, CORES) > 5.5


# ------------------------------------------------------------ observed delays


def test_a_delay_ring_keeps_its_size_and_ignores_garbage() -> None:
    ring = DelayRing(size=4)
    ring.extend([math.nan, -1.0, math.inf, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert len(ring) == 4
    assert ring.quantile(0.9) == 6.0
    assert ring.quantile(0.25) == 3.0
    assert DelayRing().quantile() is None


def test_a_window_follows_the_observed_delays_within_its_limits() -> None:
    lag, startup = DelayRing(), DelayRing()

    def window() -> float:
        return follow_window(shipped=90.0, lowest=30.0, highest=300.0, lag=lag, startup=startup)

    assert window() == 90.0  # nothing seen: shipped
    lag.extend([20.0] * 10)
    startup.extend([40.0] * 10)
    assert window() == 60.0
    startup.extend([1000.0] * 10)
    assert window() == 300.0  # the operator's limit
