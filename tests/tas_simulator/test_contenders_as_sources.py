"""The contenders behave as their sources run them, and the figures mean what they say
(tas_simulator.contenders, tas_simulator.baselines, tas_simulator.world, tas_simulator.figures).

Covered:
- psi-profile is the KubeVirtRelieveAndMigrate policy the OpenShift operator renders for the
  lab's settings (the product's own `tas descheduler --kubedescheduler` expansion agrees on
  every value the simulator keeps): LowNodeUtilization's `evictionLimits.node` 2, so one cycle
  moves two pods from each hot node, not one;
- the operator's soft tainter: `appropriate` on appropriately utilized nodes, `appropriate`
  and `overutilized` on overutilized ones, none on underutilized ones; with no underutilized
  node nothing but the overutilized nodes is tainted; a node without a value changes nothing;
  psi-profile's run carries the soft tainter, on the descheduling interval;
- descheduler candidates come in a seeded order, not name order: the same seed gives the same
  order, and across seeds the pod a cycle evicts first from a node of identical pods changes;
- Volcano with its scheduler: the `usage` plugin keeps new pods off a node above its CPU
  threshold that requests alone would pick, scores by real usage plus the estimates of pods
  bound since the last metrics, and stands aside on metrics older than 5 minutes; Volcano's
  per-pod usage exists once a 30 s subquery point holds two scrapes of a pod;
- VMs migrate, pods restart: an evicted `migration: live` pod keeps running on its node while
  its memory is copied, then pauses; an evicted pod restarts after its start-up delay;
- the kubelet acts on memory: at its threshold it evicts (usage over request first), taints
  the node MemoryPressure, and the replacement goes elsewhere: no OOM kill loop;
- `stall`: PSI "some" integrated over time per node and summed: a node at 80% utilization loses
  no work (no demand above its cores) but stalls for the Erlang C share of the time.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
import yaml

from descheduler.kubedescheduler import expand
from descheduler.plugins import low_node_utilization
from tas.cluster.model import Node, Pod, QoSClass, Taint, TaintEffect
from tas.types import Namespace, NodeName
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.scheduler import InMemoryScheduler
from tas_inmemory.workload import erlang_c
from tas_simulator.baselines import (
    APPROPRIATE_TAINT,
    OVERUTILIZED_TAINT,
    OpenShiftSoftTainter,
    VolcanoUsage,
    volcano_estimate,
)
from tas_simulator.clock import VirtualClock
from tas_simulator.contenders import PSI_PROFILE
from tas_simulator.pipeline import ModelSource
from tas_simulator.runner import run_contender
from tas_simulator.scenario import Scenario, load_scenario_text
from tas_simulator.world import InformerOrder, World
from tests.tas_simulator import worlds


def hot(seed: int = 1) -> Scenario:
    """The hot pair (tests/tas_simulator/worlds.py): worker-1 and worker-2 hold six 1.2-core pods
    each (90% of 8 cores); four are empty. The first descheduling cycle is at 2m (every baseline
    here runs every 2m, not at its shipped cadence, and one interval in: deschedulingPhase 1),
    after the taint that kept the four empty is gone."""
    contenders = ["psi-profile", "volcano-loadaware", "requests-lnu"]
    return worlds.scenario(
        worlds.hot_pair(
            name="hot-pair", duration="2m30s", seed=seed, phase=1, contenders=contenders
        )
    )


#: The lab's KubeDescheduler (/work/shared/seeds/001), in Automatic mode as simulated.
LAB = """
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata: {name: cluster, namespace: openshift-kube-descheduler-operator}
spec:
  mode: Automatic
  deschedulingIntervalSeconds: 60
  profiles: [KubeVirtRelieveAndMigrate]
  profileCustomizations:
    devEnableSoftTainter: true
    devDeviationThresholds: AsymmetricLow
    devActualUtilizationProfile: PrometheusCPUCombined
"""


@pytest.fixture
def evicted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(node, pod) of every eviction the real descheduler cycles make, in order."""
    return worlds.spy_evictions(monkeypatch, lambda d: (str(d.node), d.name))


# ------------------------------------------------------------------- psi-profile's policy


def test_psi_profile_keeps_every_value_the_operator_renders_for_the_lab() -> None:
    rendered = expand(yaml.safe_load(LAB), prometheus_url="http://prometheus.simulator:9090")
    ours = yaml.safe_load(PSI_PROFILE)
    for key in ("maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictTotal", "metricsProviders"):
        assert ours[key] == rendered.policy[key], key
    (theirs,) = rendered.policy["profiles"]
    (mine,) = ours["profiles"]
    assert mine["name"] == theirs["name"] == "KubeVirtRelieveAndMigrate"

    def args(profile: dict[str, Any], plugin: str) -> dict[str, Any]:
        return next(c["args"] for c in profile["pluginConfig"] if c["name"] == plugin)

    lnu, rendered_lnu = args(mine, "LowNodeUtilization"), args(theirs, "LowNodeUtilization")
    for key in (
        "thresholds",
        "targetThresholds",
        "useDeviationThresholds",
        "evictionLimits",
        "metricsUtilization",
    ):
        assert lnu[key] == rendered_lnu[key], key
    evictor, rendered_evictor = args(mine, "DefaultEvictor"), args(theirs, "DefaultEvictor")
    for key in ("nodeFit", "evictLocalStoragePods", "noEvictionPolicy"):
        assert evictor[key] == rendered_evictor[key], key
    # The soft tainter is OpenShift's own controller here, not this project's plugin.
    assert mine["plugins"]["balance"]["enabled"] == ["LowNodeUtilization"]


def test_psi_profile_moves_two_pods_per_hot_node_in_one_cycle(
    evicted: list[tuple[str, str]],
) -> None:
    scenario = hot()
    contender = worlds.contender("psi-profile", scenario)
    assert contender.config is not None
    profile = contender.config.profiles[0]
    assert profile.args_of(low_node_utilization.PLUGIN).node_eviction_limit == 2
    run_contender(scenario, contender, seed=scenario.seed)
    by_node: dict[str, int] = {}
    for node, _ in evicted:
        by_node[node] = by_node.get(node, 0) + 1
    assert by_node == {"worker-1": 2, "worker-2": 2}


# ------------------------------------------------------------------ the soft tainter


def _node(name: str, *, unschedulable: bool = False, taints: tuple[Taint, ...] = ()) -> Node:
    return Node(
        name=NodeName(name),
        allocatable={"cpu": 8.0, "memory": 32.0 * 2**30, "pods": 110.0},
        unschedulable=unschedulable,
        taints=taints,
    )


def _values(**by_node: float) -> dict[NodeName, float]:
    return {NodeName(name): value for name, value in by_node.items()}


TAINTER = OpenShiftSoftTainter(
    thresholds={"MetricResource": 0.0},
    target_thresholds={"MetricResource": 10.0},
    use_deviation_thresholds=True,
    query="descheduler:combined_utilization_and_pressure:avg1m",
)


def test_the_soft_tainter_marks_appropriate_and_overutilized_nodes_while_some_node_is_low() -> None:
    nodes = [_node("low"), _node("middle"), _node("hot")]
    # Average 40%: low bound 40, high bound 50.
    plan = TAINTER.plan(nodes, _values(low=0.10, middle=0.45, hot=0.65))
    assert plan == {
        "low": frozenset(),
        "middle": frozenset({APPROPRIATE_TAINT}),
        "hot": frozenset({APPROPRIATE_TAINT, OVERUTILIZED_TAINT}),
    }


def test_without_an_underutilized_node_appropriate_nodes_carry_no_taint() -> None:
    # An unschedulable node is never underutilized; with none low, the middle counts as low.
    nodes = [_node("idle", unschedulable=True), _node("middle"), _node("hot")]
    plan = TAINTER.plan(nodes, _values(idle=0.10, middle=0.45, hot=0.65))
    assert plan == {
        "idle": frozenset(),
        "middle": frozenset(),
        "hot": frozenset({APPROPRIATE_TAINT, OVERUTILIZED_TAINT}),
    }


def test_the_soft_tainter_writes_and_clears_taints_and_keeps_others() -> None:
    other = Taint("maintenance", TaintEffect.NO_SCHEDULE, "true")
    stale = Taint(OVERUTILIZED_TAINT, TaintEffect.PREFER_NO_SCHEDULE, "true")
    cluster = InMemoryCluster(clock=VirtualClock())
    for node in (_node("low", taints=(stale,)), _node("middle"), _node("hot", taints=(other,))):
        cluster.add_node(node)
    values = {NodeName("low"): 0.10, NodeName("middle"): 0.45, NodeName("hot"): 0.65}
    TAINTER.sync(cluster, lambda query: values)
    taints = {n.name: {(t.key, t.effect) for t in n.taints} for n in cluster.list_nodes()}
    soft = TaintEffect.PREFER_NO_SCHEDULE
    assert taints == {
        "low": set(),
        "middle": {(APPROPRIATE_TAINT, soft)},
        "hot": {
            ("maintenance", TaintEffect.NO_SCHEDULE),
            (APPROPRIATE_TAINT, soft),
            (OVERUTILIZED_TAINT, soft),
        },
    }
    # A node without a value (the query's answer is incomplete): nothing changes.
    TAINTER.sync(cluster, lambda query: {NodeName("low"): 0.9})
    assert {n.name: {(t.key, t.effect) for t in n.taints} for n in cluster.list_nodes()} == taints


def test_psi_profile_runs_the_soft_tainter_on_its_descheduling_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[float] = []
    original = OpenShiftSoftTainter.sync

    def spy(self: OpenShiftSoftTainter, cluster: Any, query: Any) -> None:
        calls.append(len(calls))
        original(self, cluster, query)

    monkeypatch.setattr(OpenShiftSoftTainter, "sync", spy)
    scenario = hot().with_duration(300)
    run_contender(scenario, worlds.contender("psi-profile", scenario), seed=1)
    assert len(calls) == 2  # at 2m and 4m
    calls.clear()
    run_contender(scenario, worlds.contender("requests-lnu", scenario), seed=1)
    assert calls == []


# ------------------------------------------------------------------- informer order


def test_the_descheduler_lists_pods_in_a_seeded_order_not_by_name() -> None:
    scenario = hot()

    world = World(scenario, clock=VirtualClock(), seed=1)
    names = [p.name for p in world.cluster.list_pods()]
    assert names == sorted(names)
    first = [p.name for p in InformerOrder(world.cluster, random.Random("1/x")).list_pods()]
    again = [p.name for p in InformerOrder(world.cluster, random.Random("1/x")).list_pods()]
    assert first == again
    assert sorted(first) == names
    assert first != names


def test_only_the_pod_listing_draws_from_the_seeded_stream_everything_else_is_the_cluster() -> None:
    """A read or write the descheduler makes besides listing pods neither shifts the order the
    next listing meets nor misses the cluster (a seed's run stays the run it was)."""

    scenario = hot()
    world = World(scenario, clock=VirtualClock(), seed=1)
    quiet = InformerOrder(world.cluster, random.Random("1/x"))
    busy = InformerOrder(world.cluster, random.Random("1/x"))
    node = world.cluster.list_nodes()[0].name
    assert busy.list_nodes() == world.cluster.list_nodes()
    assert busy.list_pdbs() == world.cluster.list_pdbs()
    busy.patch_node_labels(node, set_labels={"example.com/seen": "yes"})
    assert world.cluster.get_node(node).labels["example.com/seen"] == "yes"
    assert [p.name for p in busy.list_pods()] == [p.name for p in quiet.list_pods()]


def test_the_pod_evicted_first_from_identical_pods_follows_the_seed_not_the_name(
    evicted: list[tuple[str, str]],
) -> None:
    firsts = set()
    for seed in (1, 2, 3, 4):
        evicted.clear()
        scenario = hot(seed)
        run_contender(scenario, worlds.contender("psi-profile", scenario), seed=seed)
        firsts.add(next(name for node, name in evicted if node == "worker-1"))
    assert len(firsts) > 1


# ---------------------------------------------------------------------------- stall


STEADY = """
name: steady-80
duration: 4m
step: 5s
seed: 1
warmup: 1m
startupDelay: 0s
pressureModel: {kind: erlang-c}
nodes:
  - {name: only, cpu: 8, memory: 32Gi}
workloads:
  - name: load
    replicas: 8
    requests: {cpu: 500m}
    usage: {cpu: {profile: steady, value: 800m}}
"""


def test_stall_counts_pressure_below_saturation_that_work_lost_does_not() -> None:
    scenario = load_scenario_text(STEADY)
    figures = run_contender(scenario, worlds.contender("requests", scenario), seed=1).figures
    assert figures["work_lost"]["stalled"] == 0.0
    seconds = scenario.duration - scenario.warmup
    # 6.4 cores demanded of 8: PSI some is Erlang C (named), about 0.46, the whole time.
    assert figures["stall"] == pytest.approx(erlang_c(8, 6.4) * seconds, rel=0.02)


# ---------------------------------------------------------- Volcano with its scheduler

# worker-1 runs a pod that requests little and uses 95% of the node; worker-2 one that
# requests a quarter of its node and uses little. Four new pods arrive at 4m.
BUSY_BUT_EMPTY = """
name: busy-but-empty
duration: 5m
step: 5s
seed: 1
warmup: 1m
startupDelay: 10s
deschedulingInterval: 1h
metrics: {scrapeInterval: 15s, window: 1m, delay: 15s}
nodes:
  - {name: "worker-{i}", count: 2, cpu: 8, memory: 32Gi}
workloads:
  - name: hog
    replicas: 1
    requests: {cpu: 100m, memory: 1Gi}
    nodeSelector: {kubernetes.io/hostname: worker-1}
    usage: {cpu: {profile: steady, value: "7.6"}, memory: {profile: steady, value: 1Gi}}
  - name: filler
    replicas: 1
    requests: {cpu: "2", memory: 1Gi}
    nodeSelector: {kubernetes.io/hostname: worker-2}
    usage: {cpu: {profile: steady, value: 200m}, memory: {profile: steady, value: 1Gi}}
  - name: web
    replicas: 0
    requests: {cpu: 500m, memory: 1Gi}
    labels: {app: web, telemetry-policy: none}
    usage: {cpu: {profile: steady, value: 500m}, memory: {profile: steady, value: 1Gi}}
events:
  - at: 4m
    scale: {workload: web, replicas: 4}
"""


def _web_nodes(monkeypatch: pytest.MonkeyPatch, contender: str) -> list[str]:
    from tas_inmemory.scheduler import InMemoryScheduler

    placed: list[str] = []
    original = InMemoryScheduler.schedule_pending

    def spy(self: InMemoryScheduler) -> Any:
        placements = original(self)
        placed.extend(str(p.node) for p in placements if "web" in p.pod and p.node)
        return placements

    monkeypatch.setattr(InMemoryScheduler, "schedule_pending", spy)
    scenario = load_scenario_text(BUSY_BUT_EMPTY)
    run_contender(scenario, worlds.contender(contender, scenario), seed=1)
    return placed


def test_volcanos_usage_plugin_keeps_new_pods_off_a_node_above_its_cpu_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Requests alone send every new pod to the node that requests least: the busy one.
    assert _web_nodes(monkeypatch, "requests") == ["worker-1"] * 4
    assert _web_nodes(monkeypatch, "volcano-loadaware") == ["worker-2"] * 4


def make_pod(name: str, *, cpu: float = 1.0) -> Pod:
    return Pod(
        namespace=Namespace("default"),
        name=name,
        qos_class=QoSClass.BURSTABLE,
        requests={"cpu": cpu, "memory": 2.0**30},
    )


def _plugin(usage: dict[str, tuple[float, float]], *, age: float = 0.0) -> VolcanoUsage:
    nodes = {NodeName(n): _node(n) for n in usage}
    clock = [0.0]
    plugin = VolcanoUsage(nodes=lambda: nodes, recent=lambda: {}, now=lambda: clock[0])
    plugin.refresh({NodeName(n): v for n, v in usage.items()})
    clock[0] = age
    return plugin


def test_volcanos_usage_filter_and_score_follow_real_usage_while_metrics_are_fresh() -> None:
    pod = make_pod("p")
    names = [NodeName("cool"), NodeName("warm"), NodeName("hot"), NodeName("full")]
    plugin = _plugin({"cool": (10, 20), "warm": (60, 20), "hot": (85, 20), "full": (10, 90)})
    answer = plugin.filter(pod, names)
    assert answer.passed == [NodeName("cool"), NodeName("warm")]
    assert set(answer.failed) == {"hot", "full"}
    scores = plugin.prioritize(pod, names[:2])
    assert scores[NodeName("cool")] > scores[NodeName("warm")]
    # Metrics older than MetricsActiveTime (5m): every node passes, none is scored.
    stale = _plugin({"cool": (10, 20), "hot": (85, 20)}, age=301)
    assert stale.filter(pod, names[::2]).passed == names[::2]
    assert set(stale.points(pod, names[::2]).values()) == {0.0}


def test_pods_bound_since_the_last_metrics_count_by_their_estimate() -> None:
    nodes = {NodeName("a"): _node("a"), NodeName("b"): _node("b")}
    newcomers = [volcano_estimate({"cpu": 2.0, "memory": 2.0**30}) for _ in range(3)]
    shadow = (sum(c for c, _ in newcomers), sum(m for _, m in newcomers))
    plugin = VolcanoUsage(
        nodes=lambda: nodes, recent=lambda: {NodeName("a"): shadow}, now=lambda: 0.0
    )
    plugin.refresh({NodeName("a"): (10.0, 10.0), NodeName("b"): (10.0, 10.0)})
    scores = plugin.prioritize(make_pod("p"), [NodeName("a"), NodeName("b")])
    assert scores[NodeName("a")] < scores[NodeName("b")]


def _scraped(scenario_text: str, *, until: float) -> ModelSource:
    return worlds.scraped(load_scenario_text(scenario_text), until=until)


def test_volcanos_pod_usage_appears_at_the_first_subquery_point_with_two_scrapes() -> None:
    # Running from 0s (no start-up delay), scraped every 15s (delay 0 here). At 15s the
    # subquery's only point (0s) has one scrape in its 30 s irate range: no value. At 30s the
    # point 30s has the scrapes of 15s and 30s: a value, well before a whole 1m window.
    assert _scraped(STEADY, until=15.0).volcano_pod_usage() == {}
    volcano = _scraped(STEADY, until=30.0).volcano_pod_usage()
    assert len(volcano) == 8
    assert all(cpu == pytest.approx(0.8) for cpu, _ in volcano.values())


@pytest.mark.parametrize(
    ("wanted", "reported"),
    [
        pytest.param("800m", 0.8, id="6.4 cores wanted of 8: what each pod wants"),
        pytest.param("1500m", 1.0, id="12 cores wanted of 8: each pod's share of the 8 it got"),
    ],
)
def test_per_pod_cpu_is_what_the_pod_got_never_more_than_its_node_ran(
    wanted: str, reported: float
) -> None:
    # cAdvisor and metrics-server count the CPU a container ran, so on a saturated node the
    # pods' usage adds up to the node's cores: demand above them is invisible per pod, as it is
    # per node. (Before, the model reported demand, which no real cluster shows.)
    scenario = STEADY.replace("value: 800m", f"value: {wanted}")
    usage = _scraped(scenario, until=120.0).pod_usage()
    assert len(usage) == 8
    assert all(cpu == pytest.approx(reported) for cpu, _ in usage.values())


# ------------------------------------------------------------- VMs migrate, pods restart

MIGRATING = """
name: migrating
duration: 2m
step: 1s
seed: 1
warmup: 10s
startupDelay: 15s
liveMigration: {{bandwidth: 1Gi, pause: 2s}}
nodes:
  - {{name: "worker-{{i}}", count: 2, cpu: 8, memory: 32Gi}}
workloads:
  - name: app
    replicas: 1
    migration: {migration}
    requests: {{cpu: "1", memory: 4Gi}}
    usage: {{cpu: {{profile: steady, value: "2"}}, memory: {{profile: steady, value: 4Gi}}}}
"""


def _evict_and_follow(migration: str) -> list[tuple[float, float, float, float]]:
    """(t, demand on the source node, on the other node, displaced demand) each second from
    30s, when the pod is evicted and its node cordoned, so the replacement goes to the other."""
    import dataclasses

    from tas_inmemory.scheduler import InMemoryScheduler

    scenario = load_scenario_text(MIGRATING.format(migration=migration))
    clock = VirtualClock()
    world = World(scenario, clock=clock, seed=1)
    scheduler = InMemoryScheduler(world.cluster, extender=None)
    seen: list[tuple[float, float, float, float]] = []
    source = target = -1
    for second in range(0, 60):
        t = float(second)
        clock.advance_to(t)
        if second == 30:
            (pod,) = world.cluster.list_pods()
            node = world.cluster.get_node(NodeName(str(pod.node_name)))
            world.cluster.update_node(dataclasses.replace(node, unschedulable=True))
            world.cluster.evict_pod(pod.namespace, pod.name, reason="test")
            source = world.node_index[node.name]
            target = 1 - source
        scheduler.schedule_pending()
        state = world.model(t)
        if second >= 30:
            demand = state.demand
            seen.append((t, float(demand[source]), float(demand[target]), state.displaced))
    return seen


def test_an_evicted_vm_keeps_running_while_its_memory_is_copied_then_pauses() -> None:
    from tas_simulator.scenario import LiveMigration

    seen = _evict_and_follow("live")
    # 4Gi at 1Gi/s: 4s more on the source, beside the copy's own CPU there and on the target
    # (the defaults), then a 2s pause, then on the target.
    cost = LiveMigration()
    copying = [
        t
        for t, here, there, _ in seen
        if here == 2.0 + cost.source_cores and there == cost.target_cores
    ]
    paused = [t for t, here, there, displaced in seen if here == there == 0 and displaced == 2]
    on_target = [t for t, _, there, _ in seen if there == 2.0]
    assert copying == [30.0, 31.0, 32.0, 33.0]
    assert paused == [34.0, 35.0]
    assert on_target == [float(t) for t in range(36, 60)]


def test_an_evicted_pod_restarts_after_its_start_up_delay() -> None:
    seen = _evict_and_follow("restart")
    stopped = [t for t, here, there, displaced in seen if here == there == 0 and displaced == 2]
    assert stopped == [float(t) for t in range(30, 45)]


# ---------------------------------------------------------------- the kubelet and memory

# worker-2 holds a pod that requests 12Gi of its 16Gi and uses little; two pods on worker-1
# request 1Gi each and grow from 6Gi to 9Gi between 1m and 4m: together past worker-1's 16Gi.
# By requests, worker-1 is the emptier node, so a replacement would go back there.
LEAKING = """
name: leaking
duration: 8m
step: 5s
seed: 1
warmup: 1m
startupDelay: 10s
deschedulingInterval: 1h
nodes:
  - {name: "worker-{i}", count: 2, cpu: 8, memory: 16Gi}
workloads:
  - name: reserver
    replicas: 1
    priority: 1000
    requests: {cpu: "1", memory: 12Gi}
    nodeSelector: {kubernetes.io/hostname: worker-2}
    usage: {cpu: {profile: steady, value: 100m}, memory: {profile: steady, value: 1Gi}}
  - name: leaky
    replicas: 2
    requests: {cpu: "1", memory: 1Gi}
    usage:
      cpu: {profile: steady, value: 100m}
      memory: {profile: ramp, start: 6Gi, end: 9Gi, from: 1m, to: 4m}
"""


def test_the_kubelet_evicts_at_its_threshold_and_its_taint_keeps_the_replacement_away() -> None:
    scenario = load_scenario_text(LEAKING)
    result = run_contender(scenario, worlds.contender("requests", scenario), seed=1)
    figures = result.figures
    # The kubelet acts at its threshold, before the kernel must: one pod evicted, its
    # replacement kept off the tainted node, and no OOM kill at all.
    assert figures["kubelet_evictions"] == 1
    assert figures["oom_kills"] == 0


def test_the_kubelet_ranks_pods_over_their_request_then_priority_then_excess() -> None:

    scenario = load_scenario_text(LEAKING)
    world = World(scenario, clock=VirtualClock(), seed=1)
    from tas_inmemory.scheduler import InMemoryScheduler

    InMemoryScheduler(world.cluster, extender=None).schedule_pending()
    state = world.model(200.0)
    leaky = world.workload_slots[world.workload_index["leaky"]]
    reserver = world.workload_slots[world.workload_index["reserver"]]
    # The reserver uses less than it requests: ranked after every pod over its request.
    victim = world._kubelet_victim(state, np.array([*reserver, *leaky]))
    assert victim in leaky
