"""The policy controller against the in-memory cluster: the health demo and its variations.

Covered:
- the health demo (deploy/policies/health-policy.yaml): C set to 2 labels C
  `demo-policy=violating`, labels demo pods on C `violate=demo-policy`, status Violating with
  C listed, and a warning Event; C back to 0 removes both labels, status Compliant, a normal
  Event; deleting the policy leaves no label of it anywhere; dropping `deschedule` removes its
  labels;
- no flapping: repeated cycles with unchanged inputs write nothing (labels, pods, status); a
  rule change writes only the nodes whose labels change;
- status is rewritten only when it changes, or every N cycles when asked to;
- stale metrics: a value older than the view's max age is missing, so the node recovers and no
  node is labelled from stale data;
- restart: a new controller on the same cluster converges to the same labels, with no duplicate
  or orphan label, including a policy deleted while the controller was down;
- a cycle waits for the policies and the metric view, so a cold start never strips labels;
- a write that fails is counted and retried by the next cycle, a pod's too when nothing else
  changed in between; a pod linked after quiet cycles is labelled at the next;
- a mass change sends a bounded number of Events per cycle;
- the circuit breaker: when most nodes violate at once no node is newly labelled (labels
  already there stay, the status says so) until it clears; a 2-node cluster is never held.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from policy_controller.settings import ControllerSettings
from tas.cluster.interface import TransientClusterError
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.store import PolicyStore
from tas.types import NodeName, PolicyKey, PolicyName
from tas.vocabulary import OWNED_ANNOTATION, POLICY_LABEL
from tas_inmemory.cluster import WriteKind
from tests.builders import health_policy_document, policy_document, rule
from tests.instrumented_cluster import InstrumentedCluster
from tests.policy_controller.support import (
    DEMO_NAMESPACE,
    AgingMetricView,
    Harness,
    make_node,
    make_pod,
    owned_state,
)

DEMO = PolicyKey(DEMO_NAMESPACE, PolicyName("demo-policy"))


@pytest.fixture
def demo() -> Harness:
    cluster = InstrumentedCluster()
    for name in ("A", "B", "C"):
        cluster.add_node(make_node(name, labels={"kubernetes.io/hostname": name}))
    cluster.add_pod(make_pod("demo-1", node="C"))
    cluster.add_pod(make_pod("demo-2", node="A"))
    cluster.add_pod(make_pod("bystander", node="C", policy=None))
    cluster.apply_policy(health_policy_document())
    view = AgingMetricView(max_age=30)
    view.set("health_metric", {"A": 0, "B": 1, "C": 0})
    harness = Harness(cluster, view)
    harness.reconcile()
    return harness


def writes(harness: Harness) -> dict[str, int]:
    counts = harness.cluster.write_counts()
    return {kind.value: counts[kind] for kind in WriteKind if counts[kind]}


def status(harness: Harness) -> dict[str, Any]:
    found = harness.cluster.policy_status(DEMO)
    assert found is not None
    return dict(found)


def test_node_c_at_2_is_labelled_violating_with_its_demo_pods_and_a_violating_status(
    demo: Harness,
) -> None:
    demo.view.set("health_metric", {"C": 2})
    report = demo.reconcile()

    assert demo.node_labels("C")["demo-policy"] == "violating"
    assert "demo-policy" not in demo.node_labels("A")
    assert demo.pod_labels("demo-1")["violate"] == "demo-policy"
    assert "violate" not in demo.pod_labels("demo-2")
    assert "violate" not in demo.pod_labels("bystander")
    current = status(demo)
    assert current["compliance"] == "Violating"
    assert current["violatingNodes"] == {"deschedule": ["C"], "dontschedule": ["B", "C"]}
    assert current["violatingNodeCount"] == 2
    assert "C" in current["message"]
    assert current["lastEvaluation"] == "2026-01-02T03:04:05Z"
    (event,) = [e for e in demo.cluster.events if e.reason == "TASPolicyViolated"]
    assert (event.involved.kind, event.involved.name, event.type) == ("Node", "C", "Warning")
    assert "health_metric Equals 2 (value 2)" in event.message
    assert (report.node_writes, report.pod_writes, report.status_writes) == (1, 1, 1)


def test_node_c_back_to_0_loses_both_labels_and_the_policy_is_compliant(demo: Harness) -> None:
    # B at 0: at 1 it violates dontschedule, which also makes the policy Violating.
    demo.view.set("health_metric", {"B": 0, "C": 2})
    demo.reconcile()
    demo.view.set("health_metric", {"C": 0})
    demo.reconcile()

    assert "demo-policy" not in demo.node_labels("C")
    assert OWNED_ANNOTATION not in demo.cluster.get_node(NodeName("C")).annotations
    assert "violate" not in demo.pod_labels("demo-1")
    current = status(demo)
    assert current["compliance"] == "Compliant"
    assert current["violatingNodes"] == {"deschedule": [], "dontschedule": []}
    assert [e.reason for e in demo.cluster.events] == ["TASPolicyViolated", "TASPolicyCompliant"]


def test_deleting_the_policy_leaves_no_label_of_it_anywhere(demo: Harness) -> None:
    demo.view.set("health_metric", {"C": 2})
    demo.reconcile()
    demo.cluster.delete_policy(DEMO)
    demo.reconcile()

    for node in demo.cluster.list_nodes():
        assert "demo-policy" not in node.labels
        assert OWNED_ANNOTATION not in node.annotations
    for pod in demo.cluster.list_pods():
        assert "violate" not in pod.labels


def test_dropping_the_deschedule_strategy_removes_its_labels(demo: Harness) -> None:
    demo.view.set("health_metric", {"C": 2})
    demo.reconcile()
    document = health_policy_document()
    del document["spec"]["strategies"]["deschedule"]
    demo.cluster.apply_policy(document)
    demo.reconcile()

    assert "demo-policy" not in demo.node_labels("C")
    assert "violate" not in demo.pod_labels("demo-1")
    assert status(demo)["violatingNodes"] == {"dontschedule": ["B", "C"]}


def test_repeated_cycles_with_unchanged_inputs_write_nothing(demo: Harness) -> None:
    demo.view.set("health_metric", {"C": 2})
    demo.reconcile()
    demo.cluster.reset_write_counts()
    for _ in range(3):
        report = demo.reconcile()
        assert report.writes == 0
    assert writes(demo) == {}


def test_a_rule_change_writes_only_the_nodes_whose_labels_change(demo: Harness) -> None:
    # Every node ends up violating, which the circuit breaker would hold (see the breaker
    # tests); this test is about which nodes are written, so the breaker is off.
    demo.max_violating_share = 1.0
    demo.restart()
    demo.view.set("health_metric", {"A": 1, "B": 1, "C": 2})
    demo.reconcile()
    document = health_policy_document()
    document["spec"]["strategies"]["deschedule"]["rules"][0]["operator"] = "GreaterThan"
    document["spec"]["strategies"]["deschedule"]["rules"][0]["target"] = 0
    demo.cluster.apply_policy(document)
    demo.cluster.reset_write_counts()
    report = demo.reconcile()

    # C stays violating (untouched); A and B start violating; demo-2 on A gets labelled.
    assert report.node_writes == 2
    assert report.pod_writes == 1
    assert {n.name for n in demo.cluster.list_nodes() if "demo-policy" in n.labels} == {
        "A",
        "B",
        "C",
    }


def test_status_is_rewritten_every_n_cycles_only_when_asked() -> None:
    cluster = InstrumentedCluster()
    cluster.add_node(make_node("A"))
    cluster.apply_policy(health_policy_document())
    view = AgingMetricView(max_age=30)
    view.set("health_metric", {"A": 0})
    harness = Harness(cluster, view, status_refresh_cycles=3)
    reports = [harness.reconcile() for _ in range(7)]
    assert [r.status_writes for r in reports] == [1, 0, 0, 1, 0, 0, 1]


def test_stale_metrics_never_make_a_node_violating(demo: Harness) -> None:
    demo.view.set("health_metric", {"C": 2}, at=demo.view.now - 31)
    demo.reconcile()
    assert "demo-policy" not in demo.node_labels("C")

    demo.view.set("health_metric", {"C": 2})
    demo.reconcile()
    assert demo.node_labels("C")["demo-policy"] == "violating"

    demo.view.now += 31  # the value ages past max_age without a new sample: it is missing now
    demo.reconcile()
    assert "demo-policy" not in demo.node_labels("C")
    assert "violate" not in demo.pod_labels("demo-1")
    assert status(demo)["compliance"] == "Compliant"


def test_a_restarted_controller_converges_to_the_same_labels(demo: Harness) -> None:
    labeling = policy_document("cards", labeling=[rule("temp", "GreaterThan", 80, ["card=hot"])])
    demo.cluster.apply_policy(labeling)
    demo.view.set("health_metric", {"B": 2, "C": 2})
    demo.view.set("temp", {"A": 90, "C": 95})
    demo.reconcile()
    first_run = owned_state(demo.cluster)

    demo.restart()
    demo.cluster.reset_write_counts()
    demo.reconcile()
    assert owned_state(demo.cluster) == first_run
    assert writes(demo) == {"policy_status": 2}  # a new controller reports status once

    # Changes while the controller is down: the policy is deleted, temperatures cool down.
    demo.cluster.delete_policy(DEMO)
    demo.view.set("temp", {"A": 10})
    demo.restart()
    demo.reconcile()
    demo.restart()
    demo.cluster.reset_write_counts()
    demo.reconcile()
    assert writes(demo) == {"policy_status": 1}
    for node in demo.cluster.list_nodes():
        assert "demo-policy" not in node.labels, node
        assert OWNED_ANNOTATION not in node.annotations
    assert demo.node_labels("C") == {
        "kubernetes.io/hostname": "C",
        "telemetry.aware.scheduling.cards/card": "hot",
    }
    assert all("violate" not in pod.labels for pod in demo.cluster.list_pods())


def test_a_foreign_violating_label_survives_every_cycle(demo: Harness) -> None:
    node = demo.cluster.get_node(NodeName("A"))
    demo.cluster.update_node(
        dataclasses.replace(node, labels={**node.labels, "legacy-policy": "violating"})
    )
    demo.view.set("health_metric", {"A": 2})
    demo.reconcile()
    demo.view.set("health_metric", {"A": 0})
    demo.reconcile()
    assert demo.node_labels("A")["legacy-policy"] == "violating"
    assert "demo-policy" not in demo.node_labels("A")


def test_a_cold_start_waits_for_policies_and_metrics() -> None:
    cluster = InstrumentedCluster()
    cluster.add_node(make_node("C", labels={"demo-policy": "violating"}))
    cluster.apply_policy(health_policy_document())
    view = AgingMetricView(max_age=30)
    view.ready = False
    harness = Harness(cluster, view)
    assert harness.reconciler is not None
    assert harness.reconciler.reconcile().ran is False  # the store has not loaded yet
    harness.reconcile()  # policies loaded, metrics not yet refreshed
    assert harness.node_labels("C") == {"demo-policy": "violating"}
    assert cluster.total_writes() == 0
    assert view.wanted == {"health_metric"}


def test_a_failed_write_is_counted_and_retried_next_cycle(demo: Harness) -> None:
    demo.cluster.inject_failure(WriteKind.NODE_LABELS, TransientClusterError("API down"))
    demo.view.set("health_metric", {"C": 2})
    report = demo.reconcile()
    assert report.errors == 1
    assert "demo-policy" not in demo.node_labels("C")
    assert 'tas_controller_write_errors_total{kind="node"} 1.0' in metrics_text(demo)
    demo.reconcile()
    assert demo.node_labels("C")["demo-policy"] == "violating"


def test_a_failed_pod_write_is_retried_though_nothing_changed_in_between(demo: Harness) -> None:
    demo.view.set("health_metric", {"C": 2})
    demo.reconcile()
    assert demo.pod_labels("demo-1")["violate"] == "demo-policy"
    demo.cluster.add_pod(make_pod("demo-3", node="C"))
    demo.cluster.inject_failure(WriteKind.POD_LABELS, TransientClusterError("API down"))
    assert demo.reconcile().errors == 1
    assert "violate" not in demo.pod_labels("demo-3")
    demo.reconcile()  # the cluster as the failed cycle saw it, the same violations
    assert demo.pod_labels("demo-3")["violate"] == "demo-policy"


def test_a_pod_linked_after_quiet_cycles_is_labelled_at_the_next(demo: Harness) -> None:
    demo.view.set("health_metric", {"C": 2})
    for _ in range(3):
        demo.reconcile()
    assert "violate" not in demo.pod_labels("bystander")
    # What `kubectl label pod bystander telemetry-policy=demo-policy` does.
    demo.cluster.patch_pod_labels(
        DEMO_NAMESPACE, "bystander", set_labels={POLICY_LABEL: "demo-policy"}
    )
    demo.reconcile()
    assert demo.pod_labels("bystander")["violate"] == "demo-policy"


def metrics_text(harness: Harness) -> str:
    return generate_latest(harness.registry).decode()


def test_the_metrics_count_writes_and_violating_nodes(demo: Harness) -> None:
    demo.view.set("health_metric", {"C": 2})
    demo.reconcile()
    text = metrics_text(demo)
    assert 'tas_controller_label_writes_total{kind="node"} 1.0' in text
    assert 'tas_controller_label_writes_total{kind="pod"} 1.0' in text
    assert (
        'tas_controller_violating_nodes{namespace="health-metric-demo",policy="demo-policy",'
        'strategy="deschedule"} 1.0' in text
    )
    demo.cluster.delete_policy(DEMO)
    demo.reconcile()
    assert "tas_controller_violating_nodes{" not in metrics_text(demo)


def test_a_mass_change_sends_a_bounded_number_of_events() -> None:
    cluster = InstrumentedCluster()
    for index in range(5):
        cluster.add_node(make_node(f"n{index}"))
    cluster.apply_policy(health_policy_document())
    view = AgingMetricView(max_age=30)
    view.set("health_metric", {f"n{index}": 2 for index in range(5)})
    store = PolicyStore()
    ClusterPolicyLoader(cluster, store).sync()
    reconciler = Reconciler(
        cluster=cluster,
        policies=store,
        metric_view=view,
        metrics=ControllerMetrics(CollectorRegistry()),
        settings=ControllerSettings(
            max_events_per_cycle=2,
            max_violating_node_share=1.0,  # every node violating: the breaker (tested apart) is off
        ),
    )
    report = reconciler.reconcile()
    assert (report.node_writes, report.events) == (5, 2)
    assert len(cluster.events) == 2


def test_a_metric_that_makes_most_nodes_violate_at_once_labels_no_new_node() -> None:
    """The breaker: labels held while most nodes violate; normal labelling when it clears."""
    cluster = InstrumentedCluster()
    for name in ("A", "B", "C", "D"):
        cluster.add_node(make_node(name))
    cluster.add_pod(make_pod("demo-a", node="A"))
    cluster.add_pod(make_pod("demo-c", node="C"))
    cluster.apply_policy(health_policy_document())
    view = AgingMetricView(max_age=30)
    harness = Harness(cluster, view)
    view.set("health_metric", {"A": 0, "B": 0, "C": 2, "D": 0})
    harness.reconcile()
    assert harness.node_labels("C") == {"demo-policy": "violating"}

    view.set("health_metric", dict.fromkeys("ABCD", 2))  # an exporter bug: every node 2
    harness.reconcile()
    labelled = {n.name for n in cluster.list_nodes() if n.labels.get("demo-policy")}
    assert labelled == {"C"}  # C stays (it was violating); nobody new
    assert "violate" not in harness.pod_labels("demo-a")
    assert harness.pod_labels("demo-c")["violate"] == "demo-policy"
    message = status(harness)["message"]
    assert message.startswith("Circuit breaker open, deschedule held: 4 of 4 nodes")
    assert _breaker_open(harness) == 1

    view.set("health_metric", {"A": 2, "B": 0, "C": 0, "D": 0})  # fixed; A really broke
    harness.reconcile()
    labelled = {n.name for n in cluster.list_nodes() if n.labels.get("demo-policy")}
    assert labelled == {"A"}
    assert harness.pod_labels("demo-a")["violate"] == "demo-policy"
    assert not status(harness)["message"].startswith("Circuit breaker")
    assert _breaker_open(harness) == 0

    cluster.delete_policy(PolicyKey(DEMO_NAMESPACE, PolicyName("demo-policy")))
    harness.reconcile()
    assert _breaker_open(harness) is None  # no series for a policy that is gone


def _breaker_open(harness: Harness) -> float | None:
    """What Prometheus would scrape of the controller's breaker gauge for the demo policy."""
    return harness.registry.get_sample_value(
        "tas_controller_circuit_breaker_open",
        {"namespace": DEMO_NAMESPACE, "policy": "demo-policy"},
    )


def test_a_small_cluster_whose_nodes_all_violate_is_labelled() -> None:
    cluster = InstrumentedCluster()
    for name in ("A", "B"):
        cluster.add_node(make_node(name))
    cluster.apply_policy(health_policy_document())
    view = AgingMetricView(max_age=30)
    view.set("health_metric", {"A": 2, "B": 2})
    harness = Harness(cluster, view)
    harness.reconcile()
    assert {n.name for n in cluster.list_nodes() if n.labels.get("demo-policy")} == {"A", "B"}
