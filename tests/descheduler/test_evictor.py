"""The evictor's safety rails, each as a table or a short story.

Covered: every DefaultEvictor rule (mirror, static, terminating, system-critical priority, the
priority threshold by value and by name, DaemonSet, bare pods and the Failed exception, local
storage, PVCs, pods without a PDB, namespace include/exclude) and the evict annotation that
overrides them; candidate ordering; the per-node, per-namespace and total limits; the per-owner
cooldown on an injected clock, and the smaller share of it an eviction may ask for; a trial
(`EvictOptions.trial`) answering as the eviction would, the pods asked before counted against
the limits and as their owners' evictions, and leaving no trace; an open circuit breaker
holding every eviction; PDB refusals (429) counted and logged; Predictive mode reporting
without evicting; failures counted.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from descheduler.args import FieldReader
from descheduler.cycle import Mode
from descheduler.evictor import (
    Cooldown,
    CycleRails,
    EvictionBudget,
    Exhausted,
    Limits,
    PodEvictor,
    Rail,
)
from descheduler.framework import Attempt, EvictOptions, Outcome, Trial, sort_candidates
from descheduler.nodefit import NodeFitter
from descheduler.plugins import default_evictor
from descheduler.plugins.default_evictor import EvictorArgs, ProtectionRules
from descheduler.self_metrics import DeschedulerMetrics
from descheduler.state import CycleState
from tas.cluster.interface import TransientClusterError
from tas.cluster.model import (
    LabelSelector,
    OwnerReference,
    Pod,
    PodDisruptionBudget,
    QoSClass,
    Volume,
)
from tas.types import Namespace, NodeName
from tas.vocabulary import (
    CONFIG_SOURCE_ANNOTATION,
    EVICT_ANNOTATION,
    MIRROR_ANNOTATION,
    PREFER_NO_EVICTION_ANNOTATION,
)
from tas_inmemory.cluster import WriteKind
from tests.descheduler.builders import (
    START,
    FakeClock,
    cluster_with,
    make_node,
    make_pod,
    replace,
)
from tests.instrumented_cluster import InstrumentedCluster

DS = (OwnerReference("DaemonSet", "ds", controller=True),)
EVICT = {EVICT_ANNOTATION: "true"}


def evictor_args(**upstream: Any) -> EvictorArgs:
    """The DefaultEvictor's arguments as a policy file writes them (`evictSystemCriticalPods`)."""
    problems: list[str] = []
    args = default_evictor.parse_args(FieldReader(upstream, "args", problems))
    assert not problems
    return args


def rules_for(
    args: EvictorArgs, *pods: Pod, classes: dict[str, int] | None = None
) -> ProtectionRules:
    cluster = InstrumentedCluster()
    cluster.set_extras(priority_classes=classes or {})
    return ProtectionRules.resolve(args, cluster=cluster, pods=pods)


PVC = (Volume("d", "persistentVolumeClaim", "c"),)


@pytest.mark.parametrize(
    ("pod", "args", "protected"),
    [
        pytest.param(make_pod("p"), {}, None, id="an owned plain pod may go"),
        pytest.param(
            make_pod("p", apply=replace(annotations={MIRROR_ANNOTATION: "x"})),
            {},
            "mirror pod",
            id="mirror pods never",
        ),
        pytest.param(
            make_pod("p", apply=replace(annotations={CONFIG_SOURCE_ANNOTATION: "file"})),
            {},
            "static pod",
            id="static pods never",
        ),
        pytest.param(
            make_pod("p", apply=replace(deletion_timestamp=START)),
            {},
            "pod is already being deleted",
            id="terminating pods never",
        ),
        pytest.param(
            make_pod("p", apply=replace(priority=2_000_000_000)),
            {},
            "system-critical priority 2000000000",
            id="priority 2e9 never",
        ),
        pytest.param(
            make_pod("p", apply=replace(priority_class_name="system-node-critical")),
            {},
            None,
            id="the priority decides, not the class name (as upstream)",
        ),
        pytest.param(
            make_pod("p", apply=replace(priority=2_000_000_000)),
            {"evictSystemCriticalPods": True},
            None,
            id="critical pods when evictSystemCriticalPods",
        ),
        pytest.param(
            make_pod("p", apply=replace(priority=1000)),
            {"priorityThreshold": {"value": 1000}},
            "priority 1000 is at or above the threshold 1000",
            id="priority at the threshold value never",
        ),
        pytest.param(
            make_pod("p", apply=replace(priority=999)),
            {"priorityThreshold": {"value": 1000}},
            None,
            id="priority below the threshold value may go",
        ),
        pytest.param(
            make_pod("p", apply=replace(priority=1_000_000)),
            {"priorityThreshold": {"name": "system-cluster-critical"}},
            None,
            id="threshold by built-in class name",
        ),
        pytest.param(
            make_pod("p", apply=replace(owners=DS)),
            {},
            "DaemonSet pod",
            id="DaemonSet pods never",
        ),
        pytest.param(
            make_pod("p", apply=replace(owners=DS)),
            {"evictDaemonSetPods": True},
            None,
            id="DaemonSet pods when evictDaemonSetPods",
        ),
        pytest.param(
            make_pod("p", apply=replace(owners=DS)),
            {"podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
            None,
            id="DaemonSet pods when the protection is disabled",
        ),
        pytest.param(
            make_pod("p", owner=None), {}, "pod has no owner to recreate it", id="bare pods never"
        ),
        pytest.param(
            make_pod("p", owner=None, apply=replace(phase="Failed")),
            {},
            "pod has no owner to recreate it",
            id="failed bare pods not by default",
        ),
        pytest.param(
            make_pod("p", owner=None, apply=replace(phase="Failed")),
            {"evictFailedBarePods": True},
            None,
            id="failed bare pods when evictFailedBarePods",
        ),
        pytest.param(
            make_pod("p", apply=replace(volumes=(Volume("scratch", "emptyDir"),))),
            {},
            "pod uses local storage (emptyDir or hostPath)",
            id="emptyDir never by default",
        ),
        pytest.param(
            make_pod("p", apply=replace(volumes=(Volume("host", "hostPath"),))),
            {"evictLocalStoragePods": True},
            None,
            id="hostPath when evictLocalStoragePods",
        ),
        pytest.param(make_pod("p", apply=replace(volumes=PVC)), {}, None, id="PVC pods by default"),
        pytest.param(
            make_pod("p", apply=replace(volumes=PVC)),
            {"ignorePvcPods": True},
            "pod uses a PersistentVolumeClaim",
            id="PVC pods not when ignorePvcPods",
        ),
        pytest.param(
            make_pod("p", apply=replace(volumes=PVC)),
            {"podProtections": {"extraEnabled": ["PodsWithPVC"]}},
            "pod uses a PersistentVolumeClaim",
            id="PVC pods not with the PodsWithPVC protection",
        ),
        pytest.param(
            make_pod("p"),
            {"ignorePodsWithoutPDB": True},
            "pod has no PodDisruptionBudget",
            id="pods without a PDB not when ignorePodsWithoutPDB",
        ),
        pytest.param(
            make_pod("p", apply=replace(has_resource_claims=True)),
            {"podProtections": {"extraEnabled": ["PodsWithResourceClaims"]}},
            "pod has ResourceClaims",
            id="pods with resource claims not with PodsWithResourceClaims",
        ),
        pytest.param(
            make_pod("p", labels={"tier": "db"}),
            {"labelSelector": {"matchLabels": {"tier": "web"}}},
            "pod labels do not match the DefaultEvictor's labelSelector",
            id="only pods the labelSelector selects",
        ),
        pytest.param(
            make_pod("p", apply=replace(annotations={PREFER_NO_EVICTION_ANNOTATION: ""})),
            {"noEvictionPolicy": "Mandatory"},
            f"annotation {PREFER_NO_EVICTION_ANNOTATION} with noEvictionPolicy Mandatory",
            id="prefer-no-eviction pods never with noEvictionPolicy Mandatory",
        ),
        pytest.param(
            make_pod("p", apply=replace(start_time=START - timedelta(minutes=10))),
            {"minPodAge": "50m"},
            "pod is younger than minPodAge 3000s",
            id="pods younger than minPodAge never",
        ),
        pytest.param(
            make_pod("p", namespace="kube-system"),
            {"namespaces": {"exclude": ["kube-system"]}},
            "namespace kube-system is not in scope",
            id="excluded namespace never",
        ),
        pytest.param(
            make_pod("p", namespace="other"),
            {"namespaces": {"include": ["apps"]}},
            "namespace other is not in scope",
            id="namespace outside the include list never",
        ),
        pytest.param(
            make_pod("p", owner=None, apply=replace(annotations=EVICT, priority=2_000_000_000)),
            {},
            None,
            id="the evict annotation overrides bare and critical",
        ),
        pytest.param(
            make_pod(
                "p",
                apply=replace(annotations=EVICT, owners=DS, volumes=(Volume("s", "emptyDir"),)),
            ),
            {},
            None,
            id="the evict annotation overrides DaemonSet and local storage",
        ),
        pytest.param(
            make_pod("p", namespace="kube-system", apply=replace(annotations=EVICT)),
            {"namespaces": {"exclude": ["kube-system"]}},
            "namespace kube-system is not in scope",
            id="the evict annotation does not override namespace filters",
        ),
    ],
)
def test_default_evictor_rules(pod: Pod, args: dict[str, Any], protected: str | None) -> None:
    rules = rules_for(evictor_args(**args), pod)
    assert rules.protection(pod, now=START) == protected


def test_a_priority_threshold_by_name_is_resolved_through_the_cluster() -> None:
    high = make_pod("high", apply=replace(priority=5000))
    low = make_pod("low", apply=replace(priority=10))
    args = evictor_args(priorityThreshold={"name": "gold"})
    rules = rules_for(args, high, low, classes={"gold": 5000})
    assert rules.threshold == 5000
    assert rules.protection(high) is not None
    assert rules.protection(low) is None


def test_a_priority_threshold_by_name_falls_back_to_the_pods_that_use_the_class() -> None:
    high = make_pod("high", apply=replace(priority=5000, priority_class_name="gold"))
    rules = rules_for(evictor_args(priorityThreshold={"name": "gold"}), high)
    assert rules.threshold == 5000


def test_an_unknown_priority_class_protects_every_pod_rather_than_guess() -> None:
    pod = make_pod("p")
    rules = rules_for(evictor_args(priorityThreshold={"name": "nobody-uses-me"}), pod)
    assert rules.protection(pod) == "priority threshold class 'nobody-uses-me' is unknown"


def test_min_replicas_protects_pods_of_owners_with_fewer_replicas() -> None:
    owner = (OwnerReference("ReplicaSet", "rs", uid="rs-uid", controller=True),)
    lone = make_pod("lone", apply=replace(owners=owner))
    args = evictor_args(minReplicas=2)
    assert (
        rules_for(args, lone).protection(lone) == "owner has 1 replicas, fewer than minReplicas 2"
    )
    twin = make_pod("twin", apply=replace(owners=owner))
    assert rules_for(args, lone, twin).protection(lone) is None


def test_a_pdb_covering_the_pod_satisfies_ignore_pods_without_pdb() -> None:
    pod = make_pod("p", labels={"app": "web"})
    pdb = PodDisruptionBudget(Namespace("default"), "web", LabelSelector({"app": "web"}), 1)
    rules = rules_for(evictor_args(ignorePodsWithoutPDB=True), pod)
    assert rules.protection(pod, pdbs=[pdb]) is None


def test_candidates_go_lower_priority_first_then_best_effort_burstable_guaranteed() -> None:
    def pod(name: str, priority: int, qos: QoSClass) -> Pod:
        return make_pod(name, apply=replace(priority=priority, qos_class=qos))

    pods = [
        pod("g0", 0, QoSClass.GUARANTEED),
        pod("b100", 100, QoSClass.BEST_EFFORT),
        pod("bu0", 0, QoSClass.BURSTABLE),
        pod("be0", 0, QoSClass.BEST_EFFORT),
        pod("neg", -5, QoSClass.GUARANTEED),
    ]
    assert [p.name for p in sort_candidates(pods)] == ["neg", "be0", "bu0", "g0", "b100"]


@pytest.mark.parametrize(
    ("limits", "evictions", "blocked"),
    [
        pytest.param(Limits(), [("a", "x")] * 5, None, id="no limits"),
        pytest.param(
            Limits(total=2),
            [("a", "x"), ("b", "y")],
            "maxNoOfPodsToEvictTotal 2 reached",
            id="total",
        ),
        pytest.param(
            Limits(per_node=1),
            [("a", "y")],
            "maxNoOfPodsToEvictPerNode 1 reached on a",
            id="per node",
        ),
        pytest.param(
            Limits(per_namespace=1),
            [("b", "x")],
            "maxNoOfPodsToEvictPerNamespace 1 reached in x",
            id="per namespace",
        ),
        pytest.param(Limits(per_node=1), [("b", "x")], None, id="another node's count"),
    ],
)
def test_eviction_budget_limits(
    limits: Limits, evictions: list[tuple[str, str]], blocked: str | None
) -> None:
    budget = EvictionBudget(limits)
    for node, namespace in evictions:
        budget.record(node=NodeName(node), namespace=Namespace(namespace))
    assert budget.exhausted(node=NodeName("a"), namespace=Namespace("x")) == blocked


def test_an_owner_cools_down_for_the_configured_time_and_then_may_be_evicted_again() -> None:
    cooldown = Cooldown(300)
    key = ("default", "ReplicaSet", "rs")
    cooldown.record(key, START)
    assert cooldown.blocked(key, START + timedelta(seconds=299))
    assert not cooldown.blocked(key, START + timedelta(seconds=300))
    assert not cooldown.blocked(("default", "ReplicaSet", "other"), START)


def test_a_cooldown_of_zero_remembers_nothing() -> None:
    cooldown = Cooldown(0)
    cooldown.record(("default", "ReplicaSet", "rs"), START)
    assert not cooldown.blocked(("default", "ReplicaSet", "rs"), START)


# ------------------------------------------------------------------ through a real cluster


def evictor_on(
    cluster: InstrumentedCluster,
    *,
    mode: Mode = Mode.AUTOMATIC,
    limits: Limits | None = None,
    cooldown: Cooldown | None = None,
    registry: CollectorRegistry | None = None,
    halted: str | None = None,
) -> PodEvictor:
    state = CycleState(
        nodes={n.name: n for n in cluster.list_nodes()},
        pods=tuple(cluster.list_pods()),
        pdbs=tuple(cluster.list_pdbs()),
        policies={},
        metrics={},
        now=START,
    )
    rails = CycleRails(
        budget=EvictionBudget(limits or Limits()),
        cooldown=cooldown or Cooldown(0),
        halted=halted,
        dry_run=mode is Mode.PREDICTIVE,
    )
    return PodEvictor(
        cluster=cluster,
        state=state,
        rules=ProtectionRules(),
        rails=rails,
        fitter=NodeFitter(state),
        metrics=DeschedulerMetrics(registry=registry or CollectorRegistry()),
    )


def two_nodes(*pods: Pod) -> InstrumentedCluster:
    return cluster_with(make_node("node-a"), make_node("node-b"), pods=pods)


def test_a_pdb_refusal_is_counted_and_logged_and_the_pod_stays(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = two_nodes(make_pod("web-1", labels={"app": "web"}))
    cluster.add_pdb(
        PodDisruptionBudget(Namespace("default"), "web", LabelSelector({"app": "web"}), 0)
    )
    registry = CollectorRegistry()
    evictor = evictor_on(cluster, registry=registry)
    with caplog.at_level(logging.INFO):
        attempt = evictor.evict(
            cluster.list_pods()[0], EvictOptions(strategy="Test", reason="because")
        )
    assert not attempt.done
    assert (
        attempt.why == "refused: Cannot evict pod as it would violate the pod's disruption budget."
    )
    assert [p.name for p in cluster.list_pods()] == ["web-1"]
    assert "refused (PodDisruptionBudget)" in caplog.text
    assert [d.result for d in evictor.rails.decisions] == ["refused"]
    labels = {"strategy": "Test", "node": "node-a", "namespace": "default", "result": "refused"}
    assert registry.get_sample_value("tas_descheduler_evictions_total", labels) == 1
    assert evictor.rails.budget.total == 0  # a refusal does not use up the budget


def test_predictive_mode_reports_and_counts_but_evicts_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = two_nodes(make_pod("web-1"))
    registry = CollectorRegistry()
    evictor = evictor_on(cluster, mode=Mode.PREDICTIVE, limits=Limits(total=1), registry=registry)
    with caplog.at_level(logging.INFO):
        assert evictor.evict(
            cluster.list_pods()[0], EvictOptions(strategy="Test", reason="node is hot")
        ).done
    assert cluster.write_counts()[WriteKind.EVICTIONS] == 0
    assert 'Evicted pod in dry run mode pod="default/web-1"' in caplog.text
    assert 'reason="node is hot"' in caplog.text
    labels = {"strategy": "Test", "node": "node-a", "namespace": "default", "result": "dry-run"}
    assert registry.get_sample_value("tas_descheduler_evictions_total", labels) == 1
    # Dry runs count against the limits too.
    assert evictor.rails.budget.which_exhausted(node=None, namespace=Namespace("x")) is (
        Exhausted.TOTAL
    )


def test_an_eviction_goes_through_the_eviction_api_with_its_reason() -> None:
    cluster = two_nodes(make_pod("web-1"))
    evictor = evictor_on(cluster)
    assert evictor.evict(
        cluster.list_pods()[0], EvictOptions(strategy="Test", reason="node is hot")
    ).done
    (record,) = cluster.evictions
    assert record.reason == "Test: node is hot"
    assert record.replacement is not None  # the ReplicaSet made a new pending pod


def test_a_failed_eviction_is_counted_as_failed() -> None:
    cluster = two_nodes(make_pod("web-1"))
    cluster.inject_failure(WriteKind.EVICTIONS, TransientClusterError("boom"))
    evictor = evictor_on(cluster)
    assert not evictor.evict(cluster.list_pods()[0], EvictOptions(strategy="Test", reason="r")).done
    assert [d.result for d in evictor.rails.decisions] == ["failed"]


def test_the_cooldown_spares_an_owner_evicted_from_a_moment_ago() -> None:
    clock = FakeClock()
    cooldown = Cooldown(600)
    cluster = two_nodes(make_pod("web-1", owner="rs"), make_pod("web-2", owner="rs"))
    first = evictor_on(cluster, cooldown=cooldown)
    assert first.evict(
        cluster.get_pod(Namespace("default"), "web-1"), EvictOptions(strategy="T", reason="r")
    ).done
    # Even within the same cycle, one pod per owner.
    assert not first.evict(
        cluster.get_pod(Namespace("default"), "web-2"), EvictOptions(strategy="T", reason="r")
    ).done
    clock.advance(60)
    later = evictor_on(cluster, cooldown=cooldown)
    later.state.now = clock.now()
    assert not later.evict(
        cluster.get_pod(Namespace("default"), "web-2"), EvictOptions(strategy="T", reason="r")
    ).done
    clock.advance(600)
    after = evictor_on(cluster, cooldown=cooldown)
    after.state.now = clock.now()
    assert after.evict(
        cluster.get_pod(Namespace("default"), "web-2"), EvictOptions(strategy="T", reason="r")
    ).done


def test_a_clear_gain_moves_several_pods_of_an_owner_and_waits_half_the_cooldown() -> None:
    clock = FakeClock()
    cooldown = Cooldown(600)
    pods = [make_pod(f"web-{i}", owner="rs") for i in range(1, 5)]
    cluster = two_nodes(*pods)
    clear = EvictOptions(strategy="T", reason="r", cooldown_share=0.5, several_per_cycle=True)
    marginal = EvictOptions(strategy="T", reason="r")

    def pod(name: str) -> Pod:
        return cluster.get_pod(Namespace("default"), name)

    first = evictor_on(cluster, cooldown=cooldown)
    assert first.evict(pod("web-1"), clear).done
    # A clear gain: a second pod of the owner in the same cycle; a marginal one waits.
    assert first.evict(pod("web-2"), clear).done
    assert not first.evict(pod("web-3"), marginal).done
    # Half the cooldown later a clear gain may move the owner again; a marginal one may not.
    clock.advance(300)
    later = evictor_on(cluster, cooldown=cooldown)
    later.state.now = clock.now()
    assert not later.evict(pod("web-3"), marginal).done
    assert later.evict(pod("web-3"), clear).done
    # The limits still hold for a clear gain.
    limited = evictor_on(cluster, cooldown=Cooldown(600), limits=Limits(per_node=0))
    assert not limited.evict(pod("web-4"), clear).done


def test_a_trial_counts_the_pods_asked_before_against_the_limits_and_changes_nothing() -> None:
    # A plan of three evictions from node-a, where two may leave it per cycle: a trial asks
    # each pod after those before it, and the evictor stays as it was, every pod in place.
    pods = [make_pod(f"web-{i}", node="node-a", owner=f"rs-{i}") for i in range(3)]
    cluster = two_nodes(*pods)
    evictor = evictor_on(cluster, limits=Limits(per_node=2))
    evictor.rails.failure_events = True
    web = [cluster.get_pod(Namespace("default"), f"web-{i}") for i in range(3)]

    def asked(i: int) -> Attempt:
        return evictor.evict(web[i], EvictOptions("T", "r", trial=Trial(tuple(web[:i]))))

    assert asked(0).done
    assert asked(1).done
    assert asked(2) == Attempt(Outcome.NODE_LIMIT, "maxNoOfPodsToEvictPerNode 2 reached on node-a")
    assert cluster.write_counts()[WriteKind.EVICTIONS] == 0
    assert evictor.rails.budget.total == 0
    assert (evictor.rails.decisions, evictor.rails.blocked, cluster.events) == ([], [], ())
    assert evictor.state.evicted == set()
    # Asked again, the same answer; and the evictions then go as far as the trial said.
    assert asked(2).outcome is Outcome.NODE_LIMIT
    assert [evictor.evict(p, EvictOptions("T", "r")).done for p in web] == [True, True, False]
    assert [(b.name, b.rail) for b in evictor.rails.blocked] == [("web-2", Rail.LIMIT)]


def test_a_trial_counts_the_owners_of_the_pods_asked_before_as_evicted_from() -> None:
    cluster = two_nodes(make_pod("web-1", owner="rs"), make_pod("web-2", owner="rs"))
    evictor = evictor_on(cluster, cooldown=Cooldown(600))
    web_1, web_2 = (cluster.get_pod(Namespace("default"), n) for n in ("web-1", "web-2"))
    after_web_1 = Trial((web_1,))
    one_per_owner = evictor.evict(web_2, EvictOptions("T", "r", trial=after_web_1))
    assert one_per_owner == Attempt(Outcome.BLOCKED, "owner ReplicaSet/rs is cooling down")
    together = EvictOptions("T", "r", several_per_cycle=True, trial=after_web_1)
    assert evictor.evict(web_2, together).done
    already = evictor.evict(web_1, EvictOptions("T", "r", trial=after_web_1))
    assert already == Attempt(Outcome.BLOCKED, "already evicted in this cycle")
    assert evictor.rails.blocked == []


def test_an_open_circuit_breaker_blocks_every_eviction() -> None:
    cluster = two_nodes(make_pod("web-1"))
    evictor = evictor_on(cluster, halted="3 of 4 nodes with values violate at once")
    attempt = evictor.evict(cluster.list_pods()[0], EvictOptions(strategy="T", reason="r"))
    assert attempt == Attempt(
        Outcome.STOPPED, "circuit breaker open: 3 of 4 nodes with values violate at once"
    )
    assert cluster.write_counts()[WriteKind.EVICTIONS] == 0
    (blocked,) = evictor.rails.blocked
    assert (blocked.name, blocked.rail) == ("web-1", Rail.BREAKER)


def test_a_spent_limit_says_whether_to_try_the_next_pod_the_next_node_or_stop() -> None:
    pods = [make_pod(f"web-{i}", node=f"node-{n}", owner=f"rs-{i}") for i, n in enumerate("aabb")]
    cluster = cluster_with(
        make_node("node-a"), make_node("node-b"), make_node("node-c"), pods=tuple(pods)
    )
    evictor = evictor_on(cluster, mode=Mode.PREDICTIVE, limits=Limits(per_node=1, total=2))
    web = {p.name: p for p in cluster.list_pods()}
    assert evictor.evict(web["web-0"], EvictOptions(strategy="T", reason="r")).done
    node_spent = evictor.evict(web["web-1"], EvictOptions(strategy="T", reason="r"))
    assert node_spent == Attempt(
        Outcome.NODE_LIMIT, "maxNoOfPodsToEvictPerNode 1 reached on node-a"
    )
    assert evictor.evict(web["web-2"], EvictOptions(strategy="T", reason="r")).done
    assert evictor.evict(web["web-3"], EvictOptions(strategy="T", reason="r")) == Attempt(
        Outcome.STOPPED, "maxNoOfPodsToEvictTotal 2 reached"
    )
    assert [(b.name, b.rail) for b in evictor.rails.blocked] == [
        ("web-1", Rail.LIMIT),
        ("web-3", Rail.LIMIT),
    ]


def test_a_filters_rejections_are_recorded_for_the_watched_pods_only() -> None:
    daemon = replace(owners=(OwnerReference("DaemonSet", "ds", controller=True),))
    cluster = two_nodes(make_pod("ds-1", apply=daemon), make_pod("ds-2", apply=daemon))
    evictor = evictor_on(cluster).for_plugin("T", guard_owners=True)
    evictor.rails.watched = frozenset({(Namespace("default"), "ds-2")})
    assert not any(evictor.filter(p) for p in cluster.list_pods())
    (blocked,) = evictor.rails.blocked
    assert (blocked.name, blocked.strategy, blocked.rail) == ("ds-2", "T", Rail.PROTECTED)


def test_node_fit_keeps_a_pod_that_no_other_node_would_take() -> None:
    pinned = make_pod("pinned", apply=replace(node_selector={"kubernetes.io/hostname": "node-a"}))
    cluster = two_nodes(pinned)
    evictor = evictor_on(cluster)
    attempt = evictor.evict(cluster.list_pods()[0], EvictOptions(strategy="T", reason="r"))
    assert attempt == Attempt(Outcome.BLOCKED, "no other Ready node would accept it (nodeFit)")
    assert cluster.write_counts()[WriteKind.EVICTIONS] == 0
    assert [b.rail for b in evictor.rails.blocked] == [Rail.NODE_FIT]


def test_pods_of_one_shape_share_nodefits_answer_yet_each_is_judged_without_its_own_node() -> None:
    # A rebalancing cycle asks nodeFit for every pod it weighs, and keeps the answer per pod
    # shape (requests, node selection, tolerations, policy). Two web pods of 2 cores: web-1
    # fills node-a with a neighbour, web-2 shares node-b with nothing, node-c has 1 core free.
    def web(name: str, node: str) -> Pod:
        return make_pod(name, node=node, cpu=2, owner="web")

    cluster = cluster_with(
        make_node("node-a", cpu=4),
        make_node("node-b", cpu=4),
        make_node("node-c", cpu=4),
        pods=(
            web("web-1", "node-a"),
            make_pod("neighbour", node="node-a", cpu=2),
            web("web-2", "node-b"),
            make_pod("resident", node="node-c", cpu=3),
        ),
    )
    evictor = evictor_on(cluster)
    pods = {p.name: p for p in cluster.list_pods()}
    assert evictor.fitter.fitting_nodes(pods["web-1"]) == ("node-b",)
    # Not node-a: web-1 still holds its 2 cores there, whoever asked first.
    assert evictor.fitter.fitting_nodes(pods["web-2"]) == ()
    assert evictor.fitter.fitting_nodes(pods["web-2"], include_current=True) == ("node-b",)
    # An eviction changes the nodes: once web-1 is gone, node-a has room for web-2.
    assert evictor.evict(pods["web-1"], EvictOptions(strategy="Test", reason="because")).done
    assert evictor.fitter.fitting_nodes(pods["web-2"]) == ("node-a",)
