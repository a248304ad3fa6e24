"""Recent placements (herd control): the estimate is added while a node's samples miss the pod
and expires once they cover it (sample time > bind time + window), on a fake clock.

Covered:
- the estimate of one placement against its node's sample time: whole before the bind,
  shrinking while the window holds part of the pod's run, gone once covered (table);
- the load estimated (a usage feed that repeats itself still counts pods bound since): the
  pod's own measured usage once known, else its workload's per-pod
  mean (or a percentile, which takes a mix of busy and idle replicas for busy ones), else
  the requests scaled by the fleet's usage/requests ratio (never below 1); shares of the
  node's capacity (its Node's allocatable, fed by node changes) or the default capacity; only
  mapped metrics;
- nodes without a value: one that runs only recent placements (just joined) is valued at
  their estimates (0 when empty), so it fills up, loses score and is filtered like any node;
  one that also runs older pods stays without a value, and so does every node of a metric
  nobody reports;
- at the extender's level: a burst against one empty new node and several hot ones spreads
  instead of piling on the new node; on 8- and 32-core nodes each node's allocatable sizes
  the estimate;
- the tracker fed by pod changes: bound pods once, bind time from PodScheduled, then the start
  time, then the clock; deleted and finished pods forgotten; old placements pruned;
- prioritize adds estimates (the cold node of a burst stops winning), filter only when the
  caller passes them, and falls back to measured values when they would remove every node;
- the decision log shows each estimate next to the measured value;
- the sample times the refreshing view hands out are the fresh values' own;
- the window follows the pods' observed start-up (PodScheduled to Ready, read from the API's
  pod JSON by the extender's converter) and the metric lag, within the operator's limits;
  each pod's start-up counts once, and only for a recent placement;
- the extender's /metrics show each node's curve, the observed lag and start-up and the window
  (a node that leaves takes its series with it).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from extender.app import create_app
from extender.decide import decide_filter, decide_prioritize
from extender.decisions import DecisionLog
from extender.server import ExtenderServer
from extender.service import DecisionReporter, ExtenderService
from extender.settings import ExtenderSettings
from extender.wire import PodInfo
from tas.calibration.curve import CurveLearner
from tas.cluster.convert import pod_from_api, pod_summary_from_api
from tas.cluster.interface import ChangeType, ClusterChange, ResourceKind
from tas.cluster.model import Node, Pod
from tas.metrics.refreshing import RefreshingMetricView
from tas.metrics.source import Fetched, Sample
from tas.metrics.static import StaticMetricView
from tas.policies.store import PolicyStore
from tas.pressure import NodeLoad, load_for_pressure, pressure
from tas.rules import ScoreMode
from tas.types import MetricColumns, MetricName, Namespace, NodeName
from tas_herd.placements import (
    Placement,
    PlacementTracker,
    add_estimates,
    estimate_load,
    follow_cluster,
    follow_pods,
    pressure_with,
)
from tas_herd.readings import HerdReadings
from tests.builders import ManualClock, make_policy, metrics, rule
from tests.tas_herd.builders import T0, WINDOW, at, bound_at, make_pod, started_at

CPU_PRESSURE = MetricName("cpu_pressure")
CPU_UTILIZATION = MetricName("cpu_utilization")
HEALTH = MetricName("health_metric")
NODE = NodeName("node-a")


def placement(bound_at: float = 0.0, *, cpu: float = 1.0) -> Placement:
    return Placement(
        "default", "p-1", NODE, T0 + bound_at, ("default", "ReplicaSet", "web"), {"cpu": cpu}
    )


def one_estimate(sample_at: float | None, *, bound_at: float = 0.0) -> float:
    times = {} if sample_at is None else {CPU_UTILIZATION: {NODE: T0 + sample_at}}
    found = estimate_load(
        [placement(bound_at)],
        sample_times=times,
        window=WINDOW,
        resources={CPU_UTILIZATION: "cpu"},
        capacity={NODE: {"cpu": 4.0}},
        default_capacity={"cpu": 16.0},
        usage={},
    )
    return found.get(CPU_UTILIZATION, {}).get(NODE, 0.0)


@pytest.mark.parametrize(
    ("sample_at", "expected"),
    [
        pytest.param(-30.0, 0.25, id="a sample from before the bind misses the whole pod"),
        pytest.param(0.0, 0.25, id="a sample at the bind misses the whole pod"),
        pytest.param(30.0, 0.125, id="half the window after the bind misses half"),
        pytest.param(60.0, 0.0, id="sample time = bind + window: nothing missed"),
        pytest.param(60.5, 0.0, id="sample time > bind + window: covered, expired"),
        pytest.param(None, 0.0, id="a node without a value gets no estimate"),
    ],
)
def test_the_estimate_is_whole_until_samples_start_covering_the_pod_and_expires_with_them(
    sample_at: float | None, expected: float
) -> None:
    assert one_estimate(sample_at) == pytest.approx(expected)


def tracker(**overrides: Any) -> PlacementTracker:
    settings: dict[str, Any] = {
        "window": WINDOW,
        "resources": {CPU_UTILIZATION: "cpu"},
        "default_capacity": {"cpu": 8.0},
    }
    settings.update(overrides)
    return PlacementTracker(**settings)


def estimate(t: PlacementTracker, *, sample_at: float, now: float) -> float:
    found = t.estimates(sample_times={CPU_UTILIZATION: {NODE: T0 + sample_at}}, now=T0 + now)
    return found.get(CPU_UTILIZATION, {}).get(NODE, 0.0)


@pytest.mark.parametrize(
    ("apply", "observed_at", "sample_at", "expected"),
    [
        pytest.param(bound_at(100), 105, 90, 0.125, id="PodScheduled time, sample before"),
        pytest.param(bound_at(100), 105, 161, 0.0, id="PodScheduled time, covered"),
        pytest.param(started_at(100), 105, 90, 0.125, id="start time when no condition"),
        pytest.param(None, 100, 130, 0.0625, id="the clock when the pod carries no time"),
        pytest.param(bound_at(-2000), 0, -2000, 0.0, id="a bind long past is not recent"),
    ],
)
def test_the_tracker_counts_a_bound_pod_from_its_bind_time(
    apply: Callable[[Pod], Pod] | None, observed_at: float, sample_at: float, expected: float
) -> None:
    t = tracker()
    t.observe(make_pod("web-1", apply=apply), now=T0 + observed_at)
    assert estimate(t, sample_at=sample_at, now=observed_at) == pytest.approx(expected)


def test_a_pod_is_counted_once_and_forgotten_when_deleted_or_finished() -> None:
    t = tracker()
    pod = make_pod("web-1", apply=bound_at(0))
    t.observe(pod, now=T0)
    t.observe(pod, now=T0 + 1)  # a later change of the same pod
    assert estimate(t, sample_at=0, now=1) == pytest.approx(0.125)
    t.observe(replace(pod, phase="Succeeded"), now=T0 + 2)
    assert estimate(t, sample_at=0, now=2) == 0.0
    t.observe(make_pod("web-2", apply=bound_at(0)), now=T0)
    listen = follow_pods(t, lambda namespace, name: None, ManualClock(T0))
    listen(ClusterChange(ResourceKind.POD, ChangeType.DELETED, "web-2", "default"))
    assert estimate(t, sample_at=0, now=3) == 0.0


def test_pending_pods_are_not_placements_and_the_feed_reads_changed_pods() -> None:
    t = tracker()
    pods = {"web-1": make_pod("web-1", node=None)}
    listen = follow_pods(t, lambda namespace, name: pods.get(name), ManualClock(T0))
    listen(ClusterChange(ResourceKind.POD, ChangeType.ADDED, "web-1", "default"))
    assert t.placements() == []
    pods["web-1"] = make_pod("web-1", apply=bound_at(0))
    listen(ClusterChange(ResourceKind.POD, ChangeType.MODIFIED, "web-1", "default"))
    listen(ClusterChange(ResourceKind.NODE, ChangeType.MODIFIED, "node-a"))
    assert [p.name for p in t.placements()] == ["web-1"]


def test_placements_are_pruned_long_after_their_window() -> None:
    t = tracker(forget_after=100.0)
    t.observe(make_pod("web-1", apply=bound_at(0)), now=T0)
    assert estimate(t, sample_at=-10, now=150) > 0
    assert estimate(t, sample_at=-10, now=161) == 0.0
    assert t.placements() == []


@pytest.mark.parametrize("seed", range(20))
def test_only_placed_follows_every_binding_forgetting_pruning_and_node_change(seed: int) -> None:
    # A node is valued at its placements' estimates only while every pod it runs is a recent
    # placement; the answer is kept between bindings, so it must follow each change exactly.
    chooser = random.Random(seed)
    horizon = WINDOW + 100.0
    t = tracker(forget_after=100.0)
    nodes = [NodeName(f"node-{c}") for c in "abcd"]
    capacity: set[NodeName] = set()
    bound: dict[str, tuple[NodeName, float]] = {}  # pod -> its node, when it was bound
    recent: set[str] = set()
    now = 0.0
    for step in range(80):
        action = chooser.choice(["bind", "bind", "bind", "forget", "node", "later"])
        if action == "bind":
            node, name = chooser.choice(nodes), f"web-{step}"
            when = now if chooser.random() < 0.7 else now - 5000.0
            t.observe(make_pod(name, node=node, apply=bound_at(when)), now=T0 + now)
            bound[name] = (node, when)
            if now - when <= horizon:
                recent.add(name)
        elif action == "forget" and bound:
            name = chooser.choice(sorted(bound))
            t.forget("default", name)
            del bound[name]
            recent.discard(name)
        elif action == "node":
            node = chooser.choice(nodes)
            t.set_node(node, None if node in capacity else {"cpu": 8.0})
            capacity ^= {node}
        elif action == "later":
            now += chooser.choice([10.0, 200.0])
            t.estimates(sample_times={}, now=T0 + now)  # prunes what aged out
            recent = {name for name in recent if now - bound[name][1] <= horizon}
        known = capacity | {node for node, _ in bound.values()}
        expected = {
            n for n in known if all(name in recent for name, (m, _) in bound.items() if m == n)
        }
        assert t.only_placed() == expected, (seed, step, action)


def test_the_workloads_observed_usage_is_the_estimate_where_known() -> None:
    t = tracker()
    t.observe(make_pod("web-old", cpu=1.0, apply=bound_at(-5000)), now=T0)
    t.observe(make_pod("web-new", cpu=1.0, apply=bound_at(0)), now=T0)
    t.set_usage({("default", "web-old"): {"cpu": 2.0}})
    assert estimate(t, sample_at=0, now=1) == pytest.approx(2.0 / 8.0)


def test_requests_are_scaled_by_the_fleets_usage_over_requests_never_below_one() -> None:
    t = tracker()
    t.observe(make_pod("db-1", cpu=1.0, owner="db", apply=bound_at(-5000)), now=T0)
    t.observe(make_pod("web-new", cpu=1.0, apply=bound_at(0)), now=T0)
    t.set_usage({("default", "db-1"): {"cpu": 1.5}})
    assert estimate(t, sample_at=0, now=1) == pytest.approx(1.5 / 8.0)
    t.set_usage({("default", "db-1"): {"cpu": 0.25}})  # an over-requesting fleet
    assert estimate(t, sample_at=0, now=1) == pytest.approx(1.0 / 8.0)


def test_shares_use_the_nodes_capacity_where_known_and_only_mapped_metrics_get_one() -> None:
    t = tracker(resources={CPU_UTILIZATION: "cpu", CPU_PRESSURE: "cpu"})
    t.set_capacity({NODE: {"cpu": 4.0}})
    t.observe(make_pod("web-1", apply=bound_at(0)), now=T0)
    times = {m: {NODE: T0 - 1} for m in (CPU_UTILIZATION, CPU_PRESSURE, HEALTH)}
    found = t.estimates(sample_times=times, now=T0)
    assert found == {CPU_UTILIZATION: {NODE: 0.25}, CPU_PRESSURE: {NODE: 0.25}}


def test_estimates_add_to_measured_values_and_stand_alone_only_where_given() -> None:
    columns = metrics({"cpu_pressure": {"node-a": 0.1}, "health_metric": {"node-a": 1}})
    extra = {CPU_PRESSURE: {NODE: 0.2, NodeName("node-b"): 0.5}, HEALTH: {}}
    merged = add_estimates(columns, extra)
    # node-b has no value: the estimates name it only when it runs nothing but placements.
    assert merged[CPU_PRESSURE] == pytest.approx({NODE: 0.3, NodeName("node-b"): 0.5})
    assert merged[HEALTH] is columns[HEALTH]
    assert columns[CPU_PRESSURE] == {NODE: 0.1}  # the view's columns are never changed
    # A metric no node reports gets no column from estimates alone.
    assert CPU_UTILIZATION not in add_estimates(columns, {CPU_UTILIZATION: {NODE: 0.2}})


def test_pressure_estimates_follow_the_stall_curve_where_a_nodes_cores_are_known() -> None:
    loaded, empty = NodeName("node-a"), NodeName("node-b")
    columns = metrics({"cpu_pressure": {loaded: 0.2, empty: 0.0}, "cpu_utilization": {loaded: 0.6}})
    one_core_of_eight = {
        CPU_PRESSURE: {loaded: 1 / 8, empty: 1 / 8},
        CPU_UTILIZATION: {loaded: 1 / 8},
    }
    merged = add_estimates(columns, one_core_of_eight, lambda node: 8.0)
    # Added as a share, both nodes would rise by 0.125 (0.325 and 0.125). On the curve the
    # node that already stalls takes the core much harder, and the empty one barely notices:
    # the same core costs a loaded node more.
    assert merged[CPU_PRESSURE][loaded] == pytest.approx(pressure_with(0.2, 1.0, 8.0))
    assert merged[CPU_PRESSURE][loaded] > 0.4
    assert merged[CPU_PRESSURE][empty] < 0.01
    # Utilization rises by the share exactly, curve or not.
    assert merged[CPU_UTILIZATION][loaded] == pytest.approx(0.725)
    # Without cores (a caller that knows no sizes) the estimate is added as before.
    assert add_estimates(columns, one_core_of_eight)[CPU_PRESSURE][loaded] == pytest.approx(0.325)


def test_an_idle_nodes_noisy_pressure_reads_back_as_its_utilization_not_as_load() -> None:
    # An idle 16-core node reads PSI 0.012 (noise: a reading cannot fall below 0): read back
    # through Erlang C on 16 cores that is ~8 busy cores, and four placed cores would read
    # 0.24, steering a burst away from the idlest node. Below the floor (tas.pressure.MIN_PSI)
    # PSI implies no load: the node's load is its utilization's 0.8 cores, and four more
    # barely move its pressure. A node under real pressure still reads its load from PSI.
    idle, busy = NodeName("idle"), NodeName("busy")
    assert NodeLoad.measured(16.0, utilization=0.05, psi=0.012).load == pytest.approx(0.8)
    columns = metrics(
        {"cpu_pressure": {idle: 0.012, busy: 0.3}, "cpu_utilization": {idle: 0.05, busy: 0.5}}
    )
    four_cores = {CPU_PRESSURE: {idle: 4 / 16, busy: 4 / 16}}
    merged = add_estimates(columns, four_cores, lambda node: 16.0)
    assert merged[CPU_PRESSURE][idle] == pytest.approx(0.012)
    # busy: PSI 0.3 says more than its 8 busy cores (about 12.8 on Erlang C): 16.8 > 16.
    assert merged[CPU_PRESSURE][busy] == 1.0
    one_core = {CPU_PRESSURE: {idle: 1 / 16, busy: 1 / 16}}
    on_curve = add_estimates(columns, one_core, lambda node: 16.0)[CPU_PRESSURE]
    assert on_curve[busy] == pytest.approx(pressure(load_for_pressure(0.3, 16.0) + 1, 16.0))
    assert on_curve[busy] > 0.4
    # Without a utilization either, noise still implies no load (the placed core alone).
    alone = add_estimates(metrics({"cpu_pressure": {idle: 0.012}}), one_core, lambda n: 16.0)
    assert alone[CPU_PRESSURE][idle] == pytest.approx(0.012)


def test_noise_below_the_floor_reads_as_no_load_on_a_learned_curve_too() -> None:
    # A bursty node (4 effective servers of 16 cores) at PSI 0.3 reads its load through its
    # own curve (~9.8 cores, where the shared model says ~12.8); at 0.012 through neither.
    node = NodeName("node-a")
    columns = metrics({"cpu_pressure": {node: 0.3}})
    one_core = {CPU_PRESSURE: {node: 1 / 16}}
    own = add_estimates(columns, one_core, lambda n: 16.0, lambda n: 4)[CPU_PRESSURE][node]
    assert own == pytest.approx(pressure(load_for_pressure(0.3, 16.0, 4) + 1, 16.0, 4))
    quiet = add_estimates(
        metrics({"cpu_pressure": {node: 0.012}}), one_core, lambda n: 16.0, lambda n: 4
    )
    assert quiet[CPU_PRESSURE][node] == pytest.approx(max(0.012, pressure(1.0, 16.0, 4)))


def test_a_pressure_estimate_follows_the_curve_the_tracker_learned_for_the_node() -> None:
    # node-a has shown the curve of one effective server (PSI = utilization: a bursty node),
    # refresh after refresh; node-b nothing informative. One core placed on node-a at 50%
    # reads 0.625 on its own curve (vs 0.36 on the shared model's); node-b stays on the shared.
    bursty, quiet = NodeName("node-a"), NodeName("node-b")
    t = tracker(curves=CurveLearner(min_samples=4))
    t.set_node(bursty, {"cpu": 8.0})
    t.set_node(quiet, {"cpu": 8.0})
    for refresh in range(6):
        u = 0.4 + 0.1 * refresh
        times = {CPU_PRESSURE: {bursty: T0 + refresh, quiet: T0 + refresh}}
        t.learn(
            metrics({"cpu_utilization": {bursty: u, quiet: u}, "cpu_pressure": {bursty: u}}),
            sample_times=times,
            now=T0 + refresh,
        )
    assert (t.servers(bursty), t.servers(quiet)) == (1, 0)
    assert t.curves()[bursty].samples == 6
    columns = metrics({"cpu_pressure": {bursty: 0.5, quiet: 0.5}})
    one_core = {CPU_PRESSURE: {bursty: 1 / 8, quiet: 1 / 8}}
    merged = add_estimates(columns, one_core, t.cores, t.servers)
    assert merged[CPU_PRESSURE][bursty] == pytest.approx(0.625)
    assert merged[CPU_PRESSURE][quiet] == pytest.approx(pressure_with(0.5, 1.0, 8.0))
    # Off (no learner), every node is on the shared model.
    off = tracker()
    off.learn(columns, sample_times={CPU_PRESSURE: {bursty: T0}}, now=T0)
    assert off.servers(bursty) == 0


# --- nodes without a value ------------------------------------------------------------------

NEW = NodeName("new-1")
HOT = NodeName("node-a")


def test_a_node_that_runs_only_recent_placements_is_valued_at_their_estimates() -> None:
    t = tracker()
    t.set_node(HOT, {"cpu": 8.0})
    t.set_node(NEW, {"cpu": 8.0})
    t.observe(make_pod("web-old", apply=bound_at(-5000)), now=T0)  # on node-a, long ago
    times = {CPU_UTILIZATION: {HOT: T0 - 5}}
    # Empty and unmeasured: known to run nothing, so 0 (not absent).
    assert t.estimates(sample_times=times, now=T0) == {CPU_UTILIZATION: {NEW: 0.0}}
    for index in range(3):
        t.observe(make_pod(f"web-{index}", node="new-1", apply=bound_at(0)), now=T0)
    # Every pod counts whole: no sample holds any of their load.
    assert t.estimates(sample_times=times, now=T0 + 1)[CPU_UTILIZATION][NEW] == pytest.approx(3 / 8)
    # Once the node has a sample, the usual rule: only what the sample misses.
    covered = {CPU_UTILIZATION: {HOT: T0 - 5, NEW: T0 + WINDOW + 1}}
    assert NEW not in t.estimates(sample_times=covered, now=T0 + WINDOW + 2).get(
        CPU_UTILIZATION, {}
    )


def test_an_unmeasured_node_running_older_pods_or_an_unreported_metric_stays_without_a_value() -> (
    None
):
    t = tracker()
    t.set_node(NEW, {"cpu": 8.0})
    t.observe(make_pod("web-old", node="new-1", apply=bound_at(-5000)), now=T0)
    t.observe(make_pod("web-1", node="new-1", apply=bound_at(0)), now=T0)
    # node-a is measured, new-1 is not and runs a pod no estimate describes.
    assert t.estimates(sample_times={CPU_UTILIZATION: {HOT: T0}}, now=T0 + 1) == {}
    t.forget("default", "web-old")  # now new-1 runs only the recent placement
    found = t.estimates(sample_times={CPU_UTILIZATION: {HOT: T0}}, now=T0 + 1)
    assert found == {CPU_UTILIZATION: {NEW: pytest.approx(1 / 8)}}
    # No node reports the metric (an outage): no value is invented for any node.
    assert t.estimates(sample_times={CPU_UTILIZATION: {}}, now=T0 + 1) == {}


def test_a_joined_node_without_a_health_value_scores_as_a_typical_node() -> None:
    """A metric herd control makes no estimate for (a health value) leaves a joined node without
    a value: it scores the median of the valued nodes, not 0, so the extender's weight does
    not keep a burst off it. A node without a value that runs older pods still scores 0."""
    policies = PolicyStore()
    policies.replace([make_policy(scheduleonmetric=[rule("health_metric", "LessThan")])])
    t = tracker()
    valued = [NodeName("node-a"), NodeName("node-b"), NodeName("node-c")]
    old = NodeName("old")
    for node in (*valued, old, NEW):
        t.set_node(node, {"cpu": 8.0})
    for index, node in enumerate((*valued, old)):
        t.observe(make_pod(f"web-{index}", node=node, apply=bound_at(-5000)), now=T0)

    def scored(health: dict[str, float]) -> Mapping[NodeName, int]:
        return decide_prioritize(
            pod=POD,
            candidates=[*valued, old, NEW],
            snapshot=policies.snapshot(),
            metrics=metrics({"health_metric": health}),
            mode=ScoreMode.PROPORTIONAL,
            now=T0,
            newcomers=t.only_placed(),
        ).scores

    found = scored({"node-a": 0, "node-b": 1, "node-c": 2})
    assert [found[n] for n in valued] == [10, 5, 0]
    assert (found[NEW], found[old]) == (5, 0)
    found = scored({"node-a": 0, "node-b": 0, "node-c": 0})
    assert (found[NEW], found[old]) == (10, 0)  # as good as any healthy node
    # Once it runs an older pod, nothing is known about that pod: 0 again.
    t.observe(make_pod("web-late", node="new-1", apply=bound_at(-5000)), now=T0)
    assert scored({"node-a": 0, "node-b": 0, "node-c": 0})[NEW] == 0


def test_a_joined_node_fills_up_and_is_filtered_but_never_violates_on_missing_data_alone() -> None:
    policies = store()
    measured = metrics({"cpu_pressure": {"warm": 0.2}})  # new-1 has no sample yet
    candidates = [NodeName("warm"), NEW]
    t = tracker(resources={CPU_PRESSURE: "cpu"})
    t.set_node(NEW, {"cpu": 8.0})
    times = {CPU_PRESSURE: {NodeName("warm"): T0}}

    def failed() -> set[str]:
        decision = decide_filter(
            pod=POD,
            candidates=candidates,
            snapshot=policies.snapshot(),
            metrics=measured,
            now=T0,
            estimates=t.estimates(sample_times=times, now=T0 + 1),
        )
        return set(decision.failed)

    assert failed() == set()  # missing data alone never violates
    for index in range(5):  # 5 cores of 8: 0.625, over the 0.6 target
        t.observe(make_pod(f"web-{index}", node="new-1", apply=bound_at(0)), now=T0)
    assert failed() == {"new-1"}


def test_the_simulated_and_shipped_feeds_take_each_nodes_allocatable_from_node_changes() -> None:
    t = tracker()
    nodes = {"small": Node(NodeName("small"), allocatable={"cpu": 8.0})}
    listen = follow_cluster(
        t, find_pod=lambda namespace, name: None, find_node=nodes.get, clock=ManualClock(T0)
    )
    listen(ClusterChange(ResourceKind.NODE, ChangeType.ADDED, "small"))
    t.observe(make_pod("web-1", node="small", apply=bound_at(0)), now=T0)
    times = {CPU_UTILIZATION: {NodeName("small"): T0 - 1}}
    assert t.estimates(sample_times=times, now=T0)[CPU_UTILIZATION] == {"small": 1 / 8}
    nodes["small"] = Node(NodeName("small"), allocatable={"cpu": 4.0})  # resized
    listen(ClusterChange(ResourceKind.NODE, ChangeType.MODIFIED, "small"))
    assert t.estimates(sample_times=times, now=T0)[CPU_UTILIZATION] == {"small": 1 / 4}
    listen(ClusterChange(ResourceKind.NODE, ChangeType.DELETED, "small"))
    assert t.estimates(sample_times=times, now=T0)[CPU_UTILIZATION] == {"small": 1 / 8}


# --- what pods really use (issue 26) --------------------------------------------------------


def test_a_workload_of_busy_and_idle_replicas_is_estimated_at_its_busy_pods_not_its_mean() -> None:
    """psi-taint-release's batch workload: 1.7-core and 0.05-core replicas, 1 core requested
    each. The mean (1.15, the default) would let a node take a busy pod it has no room for;
    `usage_percentile=90` estimates it as a busy one."""
    t = tracker(usage_percentile=90.0)
    usage: dict[tuple[str, str], dict[str, float]] = {}
    for index in range(9):
        t.observe(make_pod(f"web-old-{index}", apply=bound_at(-5000)), now=T0)
        usage[("default", f"web-old-{index}")] = {"cpu": 1.7 if index % 3 else 0.05}
    t.observe(make_pod("web-new", apply=bound_at(0)), now=T0)
    t.set_usage(usage)
    assert estimate(t, sample_at=0, now=1) == pytest.approx(1.7 / 8.0)
    by_mean = tracker()
    by_mean.observe(make_pod("web-new", apply=bound_at(0)), now=T0)
    for index in range(9):
        by_mean.observe(make_pod(f"web-old-{index}", apply=bound_at(-5000)), now=T0)
    by_mean.set_usage(usage)
    assert estimate(by_mean, sample_at=0, now=1) == pytest.approx((6 * 1.7 + 3 * 0.05) / 9 / 8)


def test_a_placed_pods_own_measured_usage_replaces_its_workloads_estimate() -> None:
    t = tracker()
    t.observe(make_pod("web-old", apply=bound_at(-5000)), now=T0)
    t.observe(make_pod("web-new", apply=bound_at(0)), now=T0)
    t.set_usage({("default", "web-old"): {"cpu": 1.7}})
    assert estimate(t, sample_at=0, now=1) == pytest.approx(1.7 / 8.0)
    t.set_usage({("default", "web-old"): {"cpu": 1.7}, ("default", "web-new"): {"cpu": 0.05}})
    assert estimate(t, sample_at=0, now=1) == pytest.approx(0.05 / 8.0)


def test_a_repeated_usage_feed_still_counts_a_pod_bound_since() -> None:
    # The feed repeats itself between scrapes; a repeat is skipped only while the same pods
    # are bound: a pod bound since the last feed takes its own usage from the repeat.
    t = tracker()
    t.observe(make_pod("web-old", apply=bound_at(-5000)), now=T0)
    feed = {("default", "web-old"): {"cpu": 1.7}, ("default", "web-new"): {"cpu": 0.05}}
    t.set_usage(feed)
    t.observe(make_pod("web-new", apply=bound_at(0)), now=T0)
    t.set_usage(dict(feed))
    assert estimate(t, sample_at=0, now=1) == pytest.approx(0.05 / 8.0)
    t.forget("default", "web-new")
    t.observe(make_pod("web-2", apply=bound_at(0)), now=T0)
    t.set_usage(dict(feed))  # web-new is gone: web-2 is estimated at its workload's 1.7
    assert estimate(t, sample_at=0, now=1) == pytest.approx(1.7 / 8.0)


# --- at the extender's level ----------------------------------------------------------------


def burst_against(
    measured: dict[str, float],
    allocatable: dict[str, float],
    *,
    pods: int,
    pod_cpu: float = 1.0,
) -> dict[str, int]:
    """`pods` pods of one burst, each asking the shipped service (filter, then prioritize,
    then bound to the best node, as kube-scheduler does with a dominant extender weight)
    before any new sample: how many land on each node."""
    clock = ManualClock(T0)
    columns = metrics({"cpu_pressure": measured})
    t = tracker(resources={CPU_PRESSURE: "cpu"}, default_capacity={"cpu": 16.0})
    nodes = {n: Node(NodeName(n), allocatable={"cpu": cpu}) for n, cpu in allocatable.items()}
    listen = follow_cluster(
        t, find_pod=lambda namespace, name: None, find_node=nodes.get, clock=clock
    )
    for name in nodes:
        listen(ClusterChange(ResourceKind.NODE, ChangeType.ADDED, name))
    times = {CPU_PRESSURE: dict.fromkeys(map(NodeName, measured), T0)}
    service = ExtenderService(
        store=store(),
        metrics=_Columns(columns),
        settings=ExtenderSettings(),
        clock=clock,
        herd=HerdReadings(
            estimates=lambda: t.estimates(sample_times=times, now=clock.now().timestamp())
        ),
    )
    candidates = [NodeName(n) for n in allocatable]
    placed: dict[str, int] = dict.fromkeys(allocatable, 0)
    for index in range(pods):
        pod = replace(POD, name=f"burst-{index}")
        kept = [n for n in candidates if n not in service.filter(pod, candidates).failed]
        scores = service.prioritize(pod, kept).scores
        best = max(kept, key=lambda n: (scores[n], -placed[n], n))  # ties: the emptier node
        placed[best] += 1
        t.observe(
            make_pod(f"burst-{index}", node=best, cpu=pod_cpu, owner="burst", apply=bound_at(0)),
            now=T0,
        )
    return placed


class _Columns:
    def __init__(self, columns: MetricColumns) -> None:
        self._columns = columns

    def columns(self) -> MetricColumns:
        return self._columns

    def set_wanted(self, names: Iterable[MetricName]) -> None:
        pass

    @property
    def ready(self) -> bool:
        return True


def test_a_burst_against_one_empty_new_node_and_several_hot_ones_spreads() -> None:
    hot = {f"hot-{i}": 0.45 for i in range(5)}
    placed = burst_against(hot, {**dict.fromkeys(hot, 8.0), "new-1": 8.0}, pods=18)
    fair = 18 / 6
    # Before: the new node had no value, so no estimate either; it kept scoring 0 and the
    # burst piled on the hot nodes by their lagging values. Now it takes pods until its
    # estimated load reaches theirs, and the rest spread: no node gets more than twice its
    # fair share (herd control's promise, docs/recent-placements.md).
    assert placed["new-1"] >= fair, placed
    assert max(placed.values()) <= 2 * fair, placed


def test_on_mixed_node_sizes_each_nodes_allocatable_sizes_the_estimate() -> None:
    """Two equally cold nodes, 8 and 32 cores: a core is an eighth of one and a 32nd of the
    other, so the 32-core node takes about four times as many pods of a burst. With one
    default capacity for both (the extender before it read Nodes) they split it evenly."""
    placed = burst_against({"small": 0.0, "large": 0.0}, {"small": 8.0, "large": 32.0}, pods=20)
    assert placed["large"] >= 3 * placed["small"], placed
    assert placed["small"] >= 2, placed


# --- decisions ------------------------------------------------------------------------------

POD = PodInfo(name="burst-1", namespace=Namespace("default"), labels={"telemetry-policy": "p"})
CANDIDATES = [NodeName("cold"), NodeName("warm")]


def store() -> PolicyStore:
    policies = PolicyStore()
    policies.replace(
        [
            make_policy(
                dontschedule=[rule("cpu_pressure", "GreaterThan", 0.6)],
                scheduleonmetric=[rule("cpu_pressure", "LessThan")],
            )
        ]
    )
    return policies


MEASURED = metrics({"cpu_pressure": {"cold": 0.0, "warm": 0.2}})


@pytest.mark.parametrize(
    ("extra", "scores"),
    [
        pytest.param(None, {"cold": 10, "warm": 0}, id="without estimates the cold node wins"),
        pytest.param({"cold": 0.1}, {"cold": 10, "warm": 0}, id="a few pods: still colder"),
        pytest.param({"cold": 0.3}, {"cold": 0, "warm": 10}, id="a burst: no longer colder"),
    ],
)
def test_prioritize_adds_recent_placements_to_the_measured_values(
    extra: dict[str, float] | None, scores: dict[str, int]
) -> None:
    estimates = (
        None if extra is None else {CPU_PRESSURE: {NodeName(n): v for n, v in extra.items()}}
    )
    decision = decide_prioritize(
        pod=POD,
        candidates=CANDIDATES,
        snapshot=store().snapshot(),
        metrics=MEASURED,
        mode=ScoreMode.PROPORTIONAL,
        now=T0,
        estimates=estimates,
    )
    assert decision.scores == scores
    assert decision.metrics[CPU_PRESSURE] == MEASURED[CPU_PRESSURE]


@pytest.mark.parametrize(
    ("extra", "failed"),
    [
        pytest.param(None, set(), id="no estimates passed: measured values only"),
        pytest.param({"cold": 0.7}, {"cold"}, id="estimate over the target: filtered"),
        pytest.param(
            {"cold": 0.7, "warm": 0.5}, set(), id="estimates removing every node: measured only"
        ),
    ],
)
def test_filter_uses_estimates_when_passed_and_never_empties_the_list_by_them(
    extra: dict[str, float] | None, failed: set[str]
) -> None:
    estimates = (
        None if extra is None else {CPU_PRESSURE: {NodeName(n): v for n, v in extra.items()}}
    )
    decision = decide_filter(
        pod=POD,
        candidates=CANDIDATES,
        snapshot=store().snapshot(),
        metrics=MEASURED,
        now=T0,
        estimates=estimates,
    )
    assert set(decision.failed) == failed


def test_the_decision_log_shows_the_estimate_next_to_the_measured_value() -> None:
    decision = decide_prioritize(
        pod=POD,
        candidates=CANDIDATES,
        snapshot=store().snapshot(),
        metrics=MEASURED,
        mode=ScoreMode.PROPORTIONAL,
        now=T0,
        estimates={CPU_PRESSURE: {NodeName("cold"): 0.3}},
    )
    nodes = {entry["node"]: entry for entry in decision.to_json()["nodes"]}
    assert nodes["cold"]["metrics"] == {"cpu_pressure": 0.0}
    assert nodes["cold"]["estimates"] == {"cpu_pressure": 0.3}
    assert "estimates" not in nodes["warm"]
    assert "recent placements" in decision.reason


def test_the_log_line_shows_an_unmeasured_nodes_estimate_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    decision = decide_prioritize(
        pod=POD,
        candidates=[*CANDIDATES, NEW],
        snapshot=store().snapshot(),
        metrics=MEASURED,
        mode=ScoreMode.PROPORTIONAL,
        now=T0,
        estimates={CPU_PRESSURE: {NodeName("cold"): 0.3, NEW: 0.125}},
    )
    with caplog.at_level(logging.INFO, logger="extender.app"):
        DecisionReporter(DecisionLog(10)).record(decision)
    assert "Recent placements on cpu_pressure (measured+estimate): cold=0+0.3 new-1=-+0.125" in (
        caplog.text
    )
    assert decision.scores[NEW] == 10  # the coldest now: 0.125 against 0.2 and 0.3


# --- the view's sample times ----------------------------------------------------------------


class _Source:
    kind = "static"

    def fetch(self, names: frozenset[MetricName]) -> Fetched:
        column = {
            NodeName("node-a"): Sample(0.5, T0 - 10),
            NodeName("node-b"): Sample(0.5, T0 - 100),
        }
        return Fetched(columns={CPU_PRESSURE: column}, ok=frozenset({"source"}))

    def close(self) -> None:
        return None


def test_the_view_hands_out_the_sample_time_of_every_fresh_value() -> None:
    view = RefreshingMetricView(_Source(), sync_period=10, max_age=60, clock=ManualClock(T0))
    view.set_wanted([CPU_PRESSURE])
    view.refresh_once()
    assert view.columns() == {CPU_PRESSURE: {NodeName("node-a"): 0.5}}
    assert view.sample_times() == {CPU_PRESSURE: {NodeName("node-a"): T0 - 10}}


def test_estimates_kept_up_to_date_bind_by_bind_equal_a_full_recomputation() -> None:
    """A burst of binds between two metric refreshes updates the cached estimates pod by pod;
    what the extender reads is exactly what a pass over every placement gives."""
    t = tracker(resources={CPU_UTILIZATION: "cpu", CPU_PRESSURE: "cpu"})
    nodes = [NodeName(f"node-{i}") for i in range(4)]
    times = {m: dict.fromkeys(nodes, T0 + 10.0) for m in (CPU_UTILIZATION, CPU_PRESSURE)}
    for index in range(40):
        pod = make_pod(f"web-{index}", node=nodes[index % 4], cpu=0.25 + index % 3)
        t.observe(pod, now=T0 + 20 + index)
        incremental = t.estimates(sample_times=times, now=T0 + 20 + index)
        full = estimate_load(
            t.placements(),
            sample_times=times,
            window=WINDOW,
            resources=t.resources,
            capacity={},
            default_capacity={"cpu": 8.0},
            usage={},
        )
        assert incremental.keys() == full.keys()
        for metric, column in full.items():
            assert incremental[metric] == pytest.approx(column)


# --- the window follows the observed delays ---------------------------------------------------


def pod_json(
    name: str, *, bound: float, ready: float | None, node: str = "node-a"
) -> dict[str, Any]:
    """A pod as the API server serves it (`kubectl get pod -o json`, trimmed): bound at
    `bound`, ready at `ready` (None: not ready yet), seconds after T0."""

    def stamp(seconds: float) -> str:
        return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")

    conditions = [
        {
            "type": "PodReadyToStartContainers",
            "status": "True",
            "lastTransitionTime": stamp(bound + 2),
        },
        {"type": "Initialized", "status": "True", "lastTransitionTime": stamp(bound + 1)},
        {
            "type": "Ready",
            "status": "False" if ready is None else "True",
            "lastTransitionTime": stamp(bound + 1 if ready is None else ready),
            **({"reason": "ContainersNotReady"} if ready is None else {}),
        },
        {
            "type": "ContainersReady",
            "status": "False" if ready is None else "True",
            "lastTransitionTime": stamp(bound + 1 if ready is None else ready),
        },
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(bound)},
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "4242",
            "creationTimestamp": stamp(bound - 1),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-5d8f7c",
                    "uid": "rs-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "web",
                    "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "startTime": stamp(bound + 1),
            "qosClass": "Burstable",
        },
    }


def test_a_pods_summary_carries_its_bind_and_ready_times_from_its_conditions() -> None:
    ready = pod_summary_from_api(pod_json("web-1", bound=10, ready=55))
    assert (ready.bound_at, ready.ready_at) == (T0 + 10, T0 + 55)
    assert pod_from_api(pod_json("web-1", bound=10, ready=55)).ready_at == T0 + 55
    waiting = pod_summary_from_api(pod_json("web-2", bound=10, ready=None))
    assert (waiting.bound_at, waiting.ready_at) == (T0 + 10, None)


def refresh(t: PlacementTracker, *, at_seconds: float, age: float) -> None:
    """One metric refresh, its values `age` seconds old when read."""
    times = {CPU_UTILIZATION: {NODE: T0 + at_seconds - age}}
    t.learn(metrics({"cpu_utilization": {NODE: 0.5}}), sample_times=times, now=T0 + at_seconds)


def start_pods(t: PlacementTracker, count: int, *, startup: float, first: int = 0) -> None:
    """`count` pods bound (seen not ready), then seen ready `startup` seconds later, from the
    API's JSON through the extender's converter."""
    for i in range(first, first + count):
        t.observe(pod_summary_from_api(pod_json(f"web-{i}", bound=i, ready=None)), now=T0 + i)
    for i in range(first, first + count):
        ready = pod_summary_from_api(pod_json(f"web-{i}", bound=i, ready=i + startup))
        t.observe(ready, now=T0 + i + startup)


def test_the_window_follows_the_observed_start_up_and_metric_lag() -> None:
    # Pods take 2 minutes to become ready and the values are 20 s old when read: a pod's load
    # shows in its node's one-minute average only 20 + 120 + 60 s after its bind, not after
    # the shipped 90 s, and until then herd control keeps counting it.
    t = tracker(window=90.0)
    start_pods(t, 8, startup=120.0)
    for k in range(2):
        refresh(t, at_seconds=200 + 10 * k, age=20.0)
    assert t.window == 90.0  # two refreshes: the shipped window still stands
    refresh(t, at_seconds=220, age=20.0)
    assert t.window == pytest.approx(200.0)
    calibration = t.calibration()
    assert (calibration.metric_lag, calibration.startup, calibration.window) == (20.0, 120.0, 200.0)
    # A pod bound at 300 is still missed in part by a sample at 450 (150 s later).
    t.observe(make_pod("late", apply=bound_at(300)), now=T0 + 300)
    assert estimate(t, sample_at=450, now=451) > 0
    assert estimate(t, sample_at=501, now=502) == 0


def test_the_window_stays_within_the_operators_limits() -> None:
    slow = tracker(window=90.0, max_window=240.0)
    start_pods(slow, 8, startup=600.0)
    for k in range(3):
        refresh(slow, at_seconds=700 + 10 * k, age=20.0)
    assert slow.window == 240.0
    fast = tracker(window=90.0, min_window=30.0)
    start_pods(fast, 8, startup=1.0)
    for k in range(3):
        refresh(fast, at_seconds=100 + 10 * k, age=0.0)
    assert fast.window == pytest.approx(61.0)
    # By default the window never drops below the shipped one; max_window = window fixes it.
    shipped = tracker(window=90.0)
    fixed = tracker(window=90.0, max_window=90.0)
    for t in (shipped, fixed):
        start_pods(t, 8, startup=1.0 if t is shipped else 600.0)
        for k in range(3):
            refresh(t, at_seconds=700 + 10 * k, age=0.0)
        assert t.window == 90.0


def test_a_pods_start_up_counts_once_and_only_for_a_recent_placement() -> None:
    t = tracker(window=90.0)
    start_pods(t, 1, startup=30.0)
    # Its readiness flips an hour later: no new start-up.
    t.observe(pod_summary_from_api(pod_json("web-0", bound=0, ready=3600)), now=T0 + 3600)
    # A pod first seen long after its bind (an old pod, not a recent placement): none either.
    old = pod_summary_from_api(pod_json("old", bound=-5000, ready=-4000))
    t.observe(old, now=T0 + 3600)
    # A recent pod first seen ready (the watch missed its bind): its start-up counts.
    t.observe(pod_summary_from_api(pod_json("seen-ready", bound=3500, ready=3545)), now=T0 + 3600)
    assert len(t.startup) == 2
    assert t.calibration().startup == 45.0


def test_the_extender_exports_what_herd_control_learned_on_its_metrics_endpoint() -> None:
    # node-c has shown the curve of one effective server, node-b nothing informative yet;
    # pods took 45 s to start and values are 20 s old when read.
    bursty, quiet = NodeName("node-c"), NodeName("node-b")
    t = tracker(window=90.0, curves=CurveLearner(min_samples=4))
    t.set_node(bursty, {"cpu": 8.0})
    t.set_node(quiet, {"cpu": 8.0})
    start_pods(t, 8, startup=45.0)
    for k in range(6):
        u = 0.4 + 0.1 * k
        t.learn(
            metrics({"cpu_utilization": {bursty: u, quiet: 0.02}, "cpu_pressure": {bursty: u}}),
            sample_times={CPU_UTILIZATION: {bursty: T0 + 100 + k}, CPU_PRESSURE: {}},
            now=T0 + 120 + k,
        )
    registry = CollectorRegistry()
    app = create_app(
        store=PolicyStore(),
        metrics=StaticMetricView(),
        settings=ExtenderSettings(),
        registry=registry,
        herd=HerdReadings(estimates=dict, calibration=t.calibration),
    )

    def scrape(client: httpx.Client) -> dict[tuple[str, str], float]:
        return {
            (sample.name, sample.labels.get("node", "")): sample.value
            for family in text_string_to_metric_families(client.get("/metrics").text)
            for sample in family.samples
            if (sample.name.startswith("tas_extender_") and "pressure_curve" in sample.name)
            or sample.name.startswith(("tas_extender_observed", "tas_extender_estimate_window"))
        }

    with (
        ExtenderServer(app, log_level="warning") as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        shown = scrape(client)
        assert shown == {
            ("tas_extender_pressure_curve_servers", "node-c"): 1.0,
            ("tas_extender_pressure_curve_samples", "node-c"): 6.0,
            ("tas_extender_pressure_curve_fallback", "node-c"): 0.0,
            ("tas_extender_observed_metric_lag_seconds", ""): 20.0,
            ("tas_extender_observed_startup_seconds", ""): 45.0,
            ("tas_extender_estimate_window_seconds", ""): 20.0 + 45.0 + 60.0,
        }
        t.set_node(bursty, None)  # the node left: its series go with it
        assert not any(node == "node-c" for _, node in scrape(client))
