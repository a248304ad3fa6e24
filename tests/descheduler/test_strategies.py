"""Each strategy, run as a whole cycle on the in-memory cluster.

Covered: TASViolations from metrics, from node labels and from both agreeing, never on stale
(missing) metrics, and the circuit breaker (a metric that makes 80% of nodes violate evicts
nothing and says why, and evictions resume when it clears); the rules evaluated once per cycle
(each metric column read once, and TASViolations acting on the evaluation the cycle state
carries); the Prometheus the descheduler is handed reaching LowNodeUtilization through
the framework, each query asked once a cycle; RemovePodsViolatingNodeAffinity on a
TAS label, and its preferred variant; RemovePodsViolatingNodeTaints;
RemovePodsViolatingInterPodAntiAffinity (one of a pair); RemovePodsHavingTooManyRestarts with
and without init containers; PodLifeTime; RemoveDuplicates with ExcludeOwnerKinds; namespace
filters; cycles skipped with fewer than two Ready nodes; the total limit across strategies.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

import pytest

from descheduler.assemble import assemble_descheduler
from descheduler.cycle import Mode
from descheduler.evictor import Cooldown, CycleRails, EvictionBudget, Limits, PodEvictor
from descheduler.framework import PluginContext
from descheduler.nodefit import NodeFitter
from descheduler.plugins import tas_violations
from descheduler.plugins.default_evictor import ProtectionRules
from descheduler.plugins.node_affinity import PREFERRED, REQUIRED
from descheduler.state import CycleState, DescheduleEvaluation
from tas.cluster.model import (
    LabelSelector,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredSchedulingTerm,
    Requirement,
    Taint,
    TaintEffect,
    Toleration,
)
from tas.metrics.static import StaticMetricView
from tas.types import MetricColumn, MetricColumns, MetricName, NodeName
from tas.vocabulary import POLICY_LABEL
from tests.builders import make_policy, rule
from tests.descheduler.builders import (
    START,
    FakeClock,
    cluster_with,
    evicted,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
    replace,
)

HEALTH_POLICY = make_policy(
    "demo-policy",
    namespace="default",
    deschedule=[rule("health_metric", "Equals", 2)],
    dontschedule=[rule("health_metric", "Equals", 1), rule("health_metric", "Equals", 2)],
)
POLICIES = {HEALTH_POLICY.key: HEALTH_POLICY}


def demo_pod(name: str, node: str, **kw: Any) -> Any:
    return make_pod(name, node=node, owner=name, labels={POLICY_LABEL: "demo-policy"}, **kw)


def five_nodes(**labels: dict[str, str]) -> list[Any]:
    return [make_node(f"node-{c}", labels=labels.get(c)) for c in "abcde"]


def test_tas_violations_evicts_linked_pods_from_violating_nodes_only() -> None:
    pods = (
        demo_pod("on-bad", "node-a"),
        demo_pod("on-good", "node-b"),
        make_pod("unlinked", node="node-a", owner="other"),
    )
    cluster = cluster_with(*five_nodes(), pods=pods)
    health = {"health_metric": {"node-a": 2, "node-b": 0, "node-c": 0, "node-d": 0, "node-e": 0}}
    report = make_descheduler(
        cluster, policy_config("TASViolations"), metrics=health, policies=POLICIES
    ).run_cycle()
    assert evicted(report) == ["on-bad"]
    (decision,) = report.decisions
    assert decision.reason == (
        "TASViolations: node node-a violates policy demo-policy: health_metric Equals 2 (value 2)"
    )


def test_a_node_without_a_fresh_value_never_violates() -> None:
    cluster = cluster_with(*five_nodes(), pods=(demo_pod("p", "node-a"),))
    # node-a has no (fresh) value: the view leaves it out.
    health = {"health_metric": {"node-b": 0, "node-c": 0}}
    report = make_descheduler(
        cluster, policy_config("TASViolations"), metrics=health, policies=POLICIES
    ).run_cycle()
    assert report.decisions == []


@pytest.mark.parametrize(
    ("health_of_a", "avoided"),
    [
        pytest.param([2, 2, 0, 0], False, id="one evacuation paced over two cycles: a destination"),
        pytest.param([2, 0, 2, 0], True, id="violating, healthy, violating again: flapping"),
        pytest.param([2, 2, 2, 2], True, id="violating still: kept away"),
    ],
)
def test_a_flapping_node_is_told_from_an_evacuation_paced_over_cycles(
    health_of_a: list[float], avoided: bool
) -> None:
    # node-a's health metric at four cycles a minute apart; its two pods leave one per cycle
    # (maxNoOfPodsToEvictPerNode 1) while it violates. Half an hour on, past the owner
    # cooldown, rebalancing keeps away from it only if it flapped or violates still.
    pods = (demo_pod("first", "node-a"), demo_pod("second", "node-a"))
    cluster = cluster_with(*five_nodes(), pods=pods)
    view = StaticMetricView({})
    config = policy_config(
        "TASViolations", evictionCooldownSeconds=300, maxNoOfPodsToEvictPerNode=1
    )
    clock = FakeClock(START)
    descheduler = make_descheduler(cluster, config, metrics=view, policies=POLICIES, clock=clock)
    gone: list[str] = []
    for health in health_of_a:
        column = {"node-a": health, "node-b": 0, "node-c": 0, "node-d": 0, "node-e": 0}
        view.set_column(MetricName("health_metric"), column)
        gone += evicted(descheduler.run_cycle())
        clock.advance(60)
    assert sorted(gone) == ["first", "second"]
    clock.advance(1800)
    kept_away = descheduler.cooldown.evacuated_nodes(clock.now(), within=3600)
    assert ("node-a" in kept_away) is avoided


@pytest.mark.parametrize(
    ("source", "metric_a", "label_a", "expected"),
    [
        pytest.param("Labels", 0, "violating", ["p"], id="labels: the controller's label"),
        pytest.param("Labels", 2, None, [], id="labels: metrics alone do not count"),
        pytest.param("Both", 2, "violating", ["p"], id="both agree"),
        pytest.param("Both", 0, "violating", [], id="both: label not confirmed by metrics"),
        pytest.param("Metrics", 0, "violating", [], id="metrics: a label alone does not count"),
    ],
)
def test_violation_sources(
    source: str, metric_a: float, label_a: str | None, expected: list[str]
) -> None:
    labels = {"a": {"demo-policy": label_a}} if label_a else {}
    cluster = cluster_with(*five_nodes(**labels), pods=(demo_pod("p", "node-a"),))
    health = {"health_metric": {"node-a": metric_a, "node-b": 0, "node-c": 0, "node-d": 0}}
    config = policy_config("TASViolations", args={"TASViolations": {"violationSource": source}})
    report = make_descheduler(cluster, config, metrics=health, policies=POLICIES).run_cycle()
    assert evicted(report) == expected


def test_a_metric_that_makes_80_percent_of_nodes_violate_evicts_nothing_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pods = tuple(demo_pod(f"p-{c}", f"node-{c}") for c in "abcde")
    cluster = cluster_with(*five_nodes(), pods=pods)
    broken = {"health_metric": {"node-a": 2, "node-b": 2, "node-c": 2, "node-d": 2, "node-e": 0}}
    view = StaticMetricView(broken)
    descheduler = make_descheduler(
        cluster, policy_config("TASViolations"), metrics=view, policies=POLICIES
    )
    with caplog.at_level(logging.ERROR):
        report = descheduler.run_cycle()
    assert report.decisions == []
    assert len(cluster.evictions) == 0
    assert report.circuit_breaker is not None
    assert "default/demo-policy: 4 of 5 nodes with values (80%) violate at once" in (
        report.circuit_breaker
    )
    assert "Circuit breaker open" in caplog.text
    assert "node-a: default/demo-policy: health_metric Equals 2 (value 2)" in caplog.text
    # The pipeline recovers: one node violates, the breaker closes, that node's pod goes.
    fixed = {"node-a": 2, "node-b": 0, "node-c": 0, "node-d": 0, "node-e": 0}
    view.set_column(MetricName("health_metric"), fixed)
    with caplog.at_level(logging.WARNING):
        report = descheduler.run_cycle()
    assert report.circuit_breaker is None
    assert "Circuit breaker closed: 1 of 5 nodes violate; evictions resume" in caplog.text
    assert evicted(report) == ["p-a"]


class CountingColumns(Mapping[MetricName, MetricColumn]):
    """Metric columns that count how often each column is read."""

    def __init__(self, columns: MetricColumns, reads: Counter[MetricName]) -> None:
        self._columns = columns
        self.reads = reads

    def __getitem__(self, name: MetricName) -> MetricColumn:
        self.reads[name] += 1
        return self._columns[name]

    def __iter__(self) -> Iterator[MetricName]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


class CountingView(StaticMetricView):
    def __init__(self, values: Mapping[str, Mapping[str, float]]) -> None:
        super().__init__(values)
        self.reads: Counter[MetricName] = Counter()

    def columns(self) -> MetricColumns:
        return CountingColumns(super().columns(), self.reads)


def test_a_cycle_evaluates_the_rules_once_for_the_breaker_and_tas_violations() -> None:
    cluster = cluster_with(*five_nodes(), pods=(demo_pod("p", "node-a"),))
    view = CountingView({"health_metric": {"node-a": 2, "node-b": 0, "node-c": 0}})
    # nodeFit off: only the deschedule rules read the column.
    config = policy_config("TASViolations", evictor={"nodeFit": False})
    report = make_descheduler(cluster, config, metrics=view, policies=POLICIES).run_cycle()
    assert evicted(report) == ["p"]
    assert report.circuit_breaker is None
    assert view.reads == {MetricName("health_metric"): 1}


def test_tas_violations_acts_on_the_evaluation_the_cycle_state_carries() -> None:
    cluster = cluster_with(*five_nodes(), pods=(demo_pod("p", "node-b"),))
    state = CycleState(
        nodes={n.name: n for n in cluster.list_nodes()},
        pods=tuple(cluster.list_pods()),
        pdbs=(),
        policies=POLICIES,
        metrics={},  # no values at all: only the carried evaluation can say node-b violates
        now=START,
        deschedule={
            HEALTH_POLICY.key: DescheduleEvaluation(
                violating={NodeName("node-b"): "demo-policy: as evaluated"},
                with_values=frozenset({NodeName("node-b")}),
            )
        },
    )
    rails = CycleRails(budget=EvictionBudget(Limits()), cooldown=Cooldown(0), dry_run=True)
    evictor = PodEvictor(
        cluster=cluster, state=state, rules=ProtectionRules(), rails=rails, fitter=NodeFitter(state)
    )
    context = PluginContext(
        state=state, evictor=evictor, nodes=evictor.fitter, classified=lambda _: None
    )
    tas_violations.run(tas_violations.TASViolationsArgs(), context)
    assert [(d.name, d.reason) for d in rails.decisions] == [
        ("p", "TASViolations: node node-b violates policy demo-policy: as evaluated")
    ]


class RecordedPrometheus:
    """A Prometheus client answering fixed values, recording the URL and the queries."""

    def __init__(self, url: str, values: Mapping[str, float], asked: list[str]) -> None:
        self.url = url
        self._values = {NodeName(n): v for n, v in values.items()}
        self._asked = asked

    def vector(self, query: str) -> Mapping[NodeName, float]:
        self._asked.append(f"{self.url} {query}")
        return self._values


def test_the_framework_hands_low_node_utilization_the_prometheus_it_was_given() -> None:
    pods = tuple(make_pod(f"hot-{i}", node="node-a", owner=f"rs-{i}") for i in range(3))
    cluster = cluster_with(*five_nodes(), pods=pods)
    lnu = {
        "thresholds": {"MetricResource": 30},
        "targetThresholds": {"MetricResource": 50},
        "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": "node_cpu"}},
    }
    config = policy_config(
        "LowNodeUtilization",
        args={"LowNodeUtilization": lnu},
        evictor={"nodeFit": False},
        metricsProviders=[{"source": "Prometheus", "prometheus": {"url": "http://prom:9090"}}],
    )
    load = {"node-a": 0.9, "node-b": 0.1, "node-c": 0.1, "node-d": 0.4, "node-e": 0.4}
    asked: list[str] = []
    descheduler = assemble_descheduler(
        config=config,
        cluster=cluster,
        metric_view=StaticMetricView(),
        policies=dict,
        mode=Mode.PREDICTIVE,
        clock=FakeClock(),
        prometheus=lambda url: RecordedPrometheus(url, load, asked),
    )
    report = descheduler.run_cycle()
    # A Prometheus value says nothing about one pod: one pod leaves the hot node per cycle.
    assert [d.node for d in report.decisions] == ["node-a"]
    assert asked == ["http://prom:9090 node_cpu"]
    descheduler.run_cycle()
    assert asked == ["http://prom:9090 node_cpu"] * 2  # asked again next cycle, once


def test_node_affinity_evicts_pods_whose_node_got_the_violating_label() -> None:
    affinity = (NodeSelectorTerm((Requirement("demo-policy", "NotIn", ("violating",)),)),)
    pods = (
        make_pod("a-pod", node="node-a", apply=replace(required_node_affinity=affinity)),
        make_pod("b-pod", node="node-b", owner="b", apply=replace(required_node_affinity=affinity)),
        make_pod("plain", node="node-a", owner="plain"),
    )
    nodes = five_nodes(a={"demo-policy": "violating"})
    cluster = cluster_with(*nodes, pods=pods)
    config = policy_config(
        "RemovePodsViolatingNodeAffinity",
        args={"RemovePodsViolatingNodeAffinity": {"nodeAffinityType": [REQUIRED]}},
    )
    report = make_descheduler(cluster, config).run_cycle()
    assert evicted(report) == ["a-pod"]
    assert "no longer matches the pod's required node affinity" in report.decisions[0].reason


def test_preferred_node_affinity_moves_pods_to_a_node_that_scores_a_higher_weight() -> None:
    likes_ssd = (
        PreferredSchedulingTerm(10, NodeSelectorTerm((Requirement("disk", "In", ("ssd",)),))),
    )
    pods = (
        make_pod(
            "on-hdd", node="node-a", owner="x", apply=replace(preferred_node_affinity=likes_ssd)
        ),
        make_pod(
            "on-ssd", node="node-b", owner="y", apply=replace(preferred_node_affinity=likes_ssd)
        ),
    )
    nodes = five_nodes(b={"disk": "ssd"})
    cluster = cluster_with(*nodes, pods=pods)
    config = policy_config(
        "RemovePodsViolatingNodeAffinity",
        args={"RemovePodsViolatingNodeAffinity": {"nodeAffinityType": [PREFERRED]}},
    )
    report = make_descheduler(cluster, config).run_cycle()
    assert evicted(report) == ["on-hdd"]
    assert "scores preferred node affinity 10, node-a only 0" in report.decisions[0].reason


def test_node_taints_evicts_pods_that_do_not_tolerate_a_noschedule_taint() -> None:
    tainted = make_node(
        "node-a",
        apply=replace(
            taints=(
                Taint("maintenance", TaintEffect.NO_SCHEDULE, "true"),
                Taint("soft", TaintEffect.PREFER_NO_SCHEDULE),
            )
        ),
    )
    pods = (
        make_pod("intolerant", node="node-a", owner="x"),
        make_pod(
            "tolerant",
            node="node-a",
            owner="y",
            apply=replace(tolerations=(Toleration("maintenance", "Exists"),)),
        ),
    )
    cluster = cluster_with(tainted, make_node("node-b"), pods=pods)
    report = make_descheduler(cluster, policy_config("RemovePodsViolatingNodeTaints")).run_cycle()
    assert evicted(report) == ["intolerant"]
    excluded = policy_config(
        "RemovePodsViolatingNodeTaints",
        args={"RemovePodsViolatingNodeTaints": {"excludedTaints": ["maintenance=true"]}},
    )
    cluster = cluster_with(tainted, make_node("node-b"), pods=pods)
    assert make_descheduler(cluster, excluded).run_cycle().decisions == []


def test_anti_affinity_evicts_one_pod_of_a_clashing_pair() -> None:
    term = PodAffinityTerm(LabelSelector({"app": "db"}), "kubernetes.io/hostname")
    pods = (
        make_pod(
            "db-1",
            node="node-a",
            owner="db1",
            labels={"app": "db"},
            apply=replace(required_pod_anti_affinity=(term,)),
        ),
        make_pod(
            "db-2",
            node="node-a",
            owner="db2",
            labels={"app": "db"},
            apply=replace(required_pod_anti_affinity=(term,)),
        ),
        make_pod(
            "db-3",
            node="node-b",
            owner="db3",
            labels={"app": "db"},
            apply=replace(required_pod_anti_affinity=(term,)),
        ),
    )
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), make_node("node-c"), pods=pods)
    report = make_descheduler(
        cluster, policy_config("RemovePodsViolatingInterPodAntiAffinity")
    ).run_cycle()
    assert len(evicted(report)) == 1
    assert evicted(report)[0] in ("db-1", "db-2")


@pytest.mark.parametrize(
    ("including_init", "expected"),
    [
        pytest.param(False, ["crashy"], id="containers only"),
        pytest.param(True, ["crashy", "init-crashy"], id="init containers included"),
    ],
)
def test_too_many_restarts(including_init: bool, expected: list[str]) -> None:
    pods = (
        make_pod("crashy", owner="a", apply=replace(container_restarts=10)),
        make_pod(
            "init-crashy", owner="b", apply=replace(container_restarts=5, init_container_restarts=5)
        ),
        make_pod("fine", owner="c", apply=replace(container_restarts=9)),
    )
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), pods=pods)
    config = policy_config(
        "RemovePodsHavingTooManyRestarts",
        args={
            "RemovePodsHavingTooManyRestarts": {
                "podRestartThreshold": 10,
                "includingInitContainers": including_init,
            }
        },
    )
    assert evicted(make_descheduler(cluster, config).run_cycle()) == expected


def test_pod_life_time_evicts_pods_older_than_the_limit() -> None:
    pods = (
        make_pod("old", owner="a", apply=replace(creation_timestamp=START - timedelta(days=2))),
        make_pod("young", owner="b", apply=replace(creation_timestamp=START - timedelta(hours=2))),
    )
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), pods=pods)
    config = policy_config("PodLifeTime", args={"PodLifeTime": {"maxPodLifeTimeSeconds": 86400}})
    report = make_descheduler(cluster, config).run_cycle()
    assert evicted(report) == ["old"]
    assert "exceeds maxPodLifeTimeSeconds 86400" in report.decisions[0].reason


def test_remove_duplicates_spreads_an_owner_and_respects_exclude_owner_kinds() -> None:
    pods = tuple(make_pod(f"web-{i}", node="node-a", owner="web") for i in range(3)) + tuple(
        make_pod(f"job-{i}", node="node-a", owner="job", owner_kind="Job") for i in range(3)
    )
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), make_node("node-c"), pods=pods)
    config = policy_config(
        "RemoveDuplicates", args={"RemoveDuplicates": {"excludeOwnerKinds": ["Job"]}}
    )
    report = make_descheduler(cluster, config).run_cycle()
    # Even share is ceil(3 / 3) = 1; the cooldown-free config lets both excess web pods go.
    names = evicted(report)
    assert len(names) == 2
    assert all(n.startswith("web-") for n in names)


def test_namespace_filters_apply_to_every_strategy() -> None:
    pods = (
        make_pod("sys", namespace="kube-system", owner="a", apply=replace(container_restarts=50)),
        make_pod("app", namespace="apps", owner="b", apply=replace(container_restarts=50)),
    )
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), pods=pods)
    config = policy_config(
        "RemovePodsHavingTooManyRestarts",
        args={"RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 1}},
        evictor={"namespaces": {"exclude": ["kube-system"]}},
    )
    assert evicted(make_descheduler(cluster, config).run_cycle()) == ["app"]


def test_a_cycle_is_skipped_with_fewer_than_two_ready_nodes() -> None:
    cluster = cluster_with(
        make_node("node-a"),
        make_node("node-b", apply=replace(ready=False)),
        pods=(make_pod("p", apply=replace(container_restarts=50)),),
    )
    config = policy_config(
        "RemovePodsHavingTooManyRestarts",
        args={"RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 1}},
    )
    report = make_descheduler(cluster, config).run_cycle()
    assert report.skipped == "fewer than two Ready nodes in scope (1)"
    assert cluster.evictions == ()


def test_nodes_outside_the_node_selector_are_out_of_scope() -> None:
    cluster = cluster_with(
        make_node("node-a", labels={"pool": "workers"}),
        make_node("node-b"),
        make_node("node-c"),
        pods=(make_pod("p", apply=replace(container_restarts=50)),),
    )
    config = policy_config(
        "RemovePodsHavingTooManyRestarts",
        args={"RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 1}},
        nodeSelector="pool=workers",
    )
    assert make_descheduler(cluster, config).run_cycle().skipped is not None


def test_the_total_limit_holds_across_strategies_in_predictive_mode_too() -> None:
    pods = (
        *tuple(
            make_pod(f"p{i}", owner=f"o{i}", apply=replace(container_restarts=50)) for i in range(4)
        ),
        make_pod("old", owner="x", apply=replace(creation_timestamp=START - timedelta(days=9))),
    )
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), pods=pods)
    config = policy_config(
        "RemovePodsHavingTooManyRestarts",
        "PodLifeTime",
        args={
            "RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 1},
            "PodLifeTime": {"maxPodLifeTimeSeconds": 60},
        },
        maxNoOfPodsToEvictTotal=3,
    )
    report = make_descheduler(cluster, config, mode=Mode.PREDICTIVE).run_cycle()
    assert len(report.by_result("dry-run")) == 3
    assert cluster.evictions == ()
