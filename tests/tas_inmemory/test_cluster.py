"""The in-memory cluster behaves like the API server where the components can tell.

Covered:
- reads: nodes and pods sorted, pods per node, policy documents with namespace defaulted;
  one listing of the pods serves until a pod is written, and shows every write;
- label patches touch only the given keys; a no-op patch is counted but changes nothing;
- taints are replaced as a whole;
- policy documents: apply (generation bumps only on spec change, status kept), delete,
  status written and read back, unknown policy is NotFoundError;
- events are recorded with type;
- evictions: EVICTED, NOT_FOUND, REFUSED by a PDB with no disruptions left, PDB decremented,
  pending pods skip the PDB, more than one PDB fails, injected failure is FAILED;
- owners recreate evicted pods (ReplicaSet: new name and pending, without the controller's
  `violate` label; StatefulSet: same name; no owner: gone);
- write counters per kind and reset; change notification and unsubscribe;
- concurrent writers from several threads lose nothing.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from tas.cluster.interface import (
    ChangeType,
    ClusterChange,
    EvictionOutcome,
    NotFoundError,
    ObservableCluster,
    ResourceKind,
    TransientClusterError,
)
from tas.cluster.model import (
    LabelSelector,
    ObjectReference,
    PodDisruptionBudget,
    Taint,
    TaintEffect,
)
from tas.types import Namespace, NodeName, PolicyKey, PolicyName
from tas_inmemory.cluster import WriteKind
from tests import builders
from tests.instrumented_cluster import InstrumentedCluster

NS = Namespace("default")


make_node = builders.make_node
#: The web ReplicaSet's pods, linked to policy demo, on n1.
make_pod = functools.partial(
    builders.make_pod,
    node="n1",
    cpu=0.5,
    labels={"app": "web"},
    policy="demo",
    owner="web-rs",
)


def policy_doc(name: str = "demo", namespace: str | None = "default") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "telemetry.intel.com/v1alpha1",
        "kind": "TASPolicy",
        "metadata": metadata,
        "spec": {
            "strategies": {
                "deschedule": {"rules": [{"metricname": "m", "operator": "Equals", "target": 2}]}
            }
        },
    }


@pytest.fixture
def cluster() -> InstrumentedCluster:
    cluster = InstrumentedCluster()
    cluster.add_node(make_node("n2"))
    cluster.add_node(make_node("n1"))
    cluster.add_pod(make_pod("web-b", node="n2"))
    cluster.add_pod(make_pod("web-a"))
    return cluster


def test_it_satisfies_the_observable_cluster_protocol(cluster: InstrumentedCluster) -> None:
    observable: ObservableCluster = cluster
    assert observable.list_nodes()


def test_nodes_and_pods_are_listed_sorted_and_pods_can_be_listed_per_node(
    cluster: InstrumentedCluster,
) -> None:
    assert [n.name for n in cluster.list_nodes()] == ["n1", "n2"]
    assert [p.name for p in cluster.list_pods()] == ["web-a", "web-b"]
    assert [p.name for p in cluster.list_pods(node=NodeName("n2"))] == ["web-b"]
    assert all(p.uid for p in cluster.list_pods())


def test_pods_are_listed_once_between_writes_and_every_write_shows_in_the_next_listing(
    cluster: InstrumentedCluster,
) -> None:
    # The components list the pods many times a step: one listing serves until a pod is
    # written, and no write of any kind is missed.
    listed = cluster.list_pods()
    assert cluster.list_pods() is listed
    cluster.add_pod(make_pod("p", node=None))
    assert [p.name for p in cluster.list_pods()] == ["p", "web-a", "web-b"]
    cluster.bind_pod(NS, "p", NodeName("n2"))
    assert cluster.get_pod(NS, "p") in cluster.list_pods()
    assert [p.name for p in cluster.list_pods(node=NodeName("n2"))] == ["p", "web-b"]
    cluster.mark_ready(NS, "p")
    assert cluster.get_pod(NS, "p") in cluster.list_pods()
    cluster.patch_pod_labels(NS, "web-a", set_labels={"x": "1"})
    assert cluster.get_pod(NS, "web-a").labels["x"] == "1"
    assert cluster.get_pod(NS, "web-a") in cluster.list_pods()
    cluster.remove_pod(NS, "p")
    assert [p.name for p in cluster.list_pods()] == ["web-a", "web-b"]
    cluster.evict_pod(NS, "web-b", reason="test")
    assert "web-b" not in [p.name for p in cluster.list_pods()]


def test_label_patches_touch_only_the_given_keys(cluster: InstrumentedCluster) -> None:
    cluster.patch_node_labels(NodeName("n1"), set_labels={"demo": "violating"})
    cluster.patch_node_labels(NodeName("n1"), set_labels={"x": "1"}, remove=["demo", "absent"])
    assert dict(cluster.get_node(NodeName("n1")).labels) == {
        "kubernetes.io/hostname": "n1",
        "x": "1",
    }
    cluster.patch_pod_labels(NS, "web-a", set_labels={"violate": "demo"}, remove=["app"])
    assert dict(cluster.get_pod(NS, "web-a").labels) == {
        "telemetry-policy": "demo",
        "violate": "demo",
    }


def test_a_patch_that_changes_nothing_keeps_the_resource_version(
    cluster: InstrumentedCluster,
) -> None:
    before = cluster.get_node(NodeName("n1")).resource_version
    cluster.patch_node_labels(NodeName("n1"), set_labels={"kubernetes.io/hostname": "n1"})
    assert cluster.get_node(NodeName("n1")).resource_version == before
    assert cluster.write_counts()[WriteKind.NODE_LABELS] == 1


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(
            lambda c: c.patch_node_labels(NodeName("nope"), set_labels={"a": "b"}), id="node-label"
        ),
        pytest.param(lambda c: c.patch_pod_labels(NS, "nope", set_labels={}), id="pod-label"),
        pytest.param(lambda c: c.set_node_taints(NodeName("nope"), []), id="taints"),
        pytest.param(
            lambda c: c.update_policy_status(PolicyKey(NS, PolicyName("nope")), {}), id="status"
        ),
    ],
)
def test_writes_to_unknown_objects_raise_not_found(
    cluster: InstrumentedCluster, write: Callable[[InstrumentedCluster], None]
) -> None:
    with pytest.raises(NotFoundError):
        write(cluster)


def test_taints_are_replaced_as_a_whole(cluster: InstrumentedCluster) -> None:
    hot = Taint("tas/overutilized", TaintEffect.PREFER_NO_SCHEDULE, "true")
    other = Taint("dedicated", TaintEffect.NO_SCHEDULE, "db")
    cluster.set_node_taints(NodeName("n1"), [other, hot])
    cluster.set_node_taints(NodeName("n1"), [other])
    assert cluster.get_node(NodeName("n1")).taints == (other,)


def test_policies_default_their_namespace_and_bump_generation_only_on_spec_change(
    cluster: InstrumentedCluster,
) -> None:
    key = cluster.apply_policy(policy_doc(namespace=None))
    assert key == PolicyKey(NS, PolicyName("demo"))
    (document,) = cluster.list_policy_documents()
    assert document.key == key
    assert document.body["metadata"]["namespace"] == "default"
    assert document.body["metadata"]["generation"] == 1
    cluster.update_policy_status(key, {"compliance": "Compliant"})
    cluster.apply_policy(policy_doc())
    (document,) = cluster.list_policy_documents()
    assert document.body["metadata"]["generation"] == 1
    assert document.body["status"] == {"compliance": "Compliant"}
    changed = policy_doc()
    changed["spec"]["strategies"]["deschedule"]["rules"][0]["target"] = 3
    cluster.apply_policy(changed)
    (document,) = cluster.list_policy_documents()
    assert document.body["metadata"]["generation"] == 2


def test_policy_status_is_readable_back_and_deleting_a_policy_removes_it(
    cluster: InstrumentedCluster,
) -> None:
    key = cluster.apply_policy(policy_doc())
    assert cluster.policy_status(key) is None
    cluster.update_policy_status(key, {"compliance": "Violating", "violating": ["n1"]})
    assert cluster.policy_status(key) == {"compliance": "Violating", "violating": ["n1"]}
    cluster.delete_policy(key)
    assert cluster.list_policy_documents() == ()
    with pytest.raises(NotFoundError):
        cluster.policy_status(key)


def test_documents_handed_out_are_copies(cluster: InstrumentedCluster) -> None:
    cluster.apply_policy(policy_doc())
    (document,) = cluster.list_policy_documents()
    document.body["spec"]["strategies"].clear()
    (again,) = cluster.list_policy_documents()
    assert again.body["spec"]["strategies"]


def test_events_are_recorded_with_their_type(cluster: InstrumentedCluster) -> None:
    about = ObjectReference("Pod", "web-a", "default")
    cluster.emit_event(about, reason="Evicted", message="node n1 violates demo")
    cluster.emit_event(about, reason="EvictionRefused", message="pdb", warning=True)
    assert [(e.reason, e.type) for e in cluster.events] == [
        ("Evicted", "Normal"),
        ("EvictionRefused", "Warning"),
    ]


def test_an_evicted_replicaset_pod_is_replaced_by_a_new_pending_pod(
    cluster: InstrumentedCluster,
) -> None:
    cluster.patch_pod_labels(NS, "web-a", set_labels={"violate": "demo"})
    before = cluster.get_pod(NS, "web-a")
    result = cluster.evict_pod(NS, "web-a", reason="demo violated on n1")
    assert result.outcome is EvictionOutcome.EVICTED
    names = [p.name for p in cluster.list_pods()]
    assert "web-a" not in names
    (replacement,) = [p for p in cluster.list_pods() if p.name not in ("web-b",)]
    assert replacement.name.startswith("web-rs-")
    assert replacement.node_name is None
    assert replacement.phase == "Pending"
    assert replacement.uid != before.uid
    # From the owner's template: the controller's `violate` label is not copied.
    assert replacement.labels == {k: v for k, v in before.labels.items() if k != "violate"}
    assert "violate" in before.labels
    assert replacement.requests == before.requests
    (record,) = cluster.evictions
    assert (record.name, record.node, record.replacement) == ("web-a", "n1", replacement.name)


def test_an_evicted_statefulset_pod_comes_back_with_its_name(cluster: InstrumentedCluster) -> None:
    cluster.add_pod(make_pod("db-0", owner="db", owner_kind="StatefulSet"))
    uid = cluster.get_pod(NS, "db-0").uid
    cluster.evict_pod(NS, "db-0", reason="test")
    again = cluster.get_pod(NS, "db-0")
    assert again.uid != uid
    assert again.node_name is None


def test_an_evicted_pod_without_owner_is_gone(cluster: InstrumentedCluster) -> None:
    cluster.add_pod(make_pod("lonely", owner=None))
    assert cluster.evict_pod(NS, "lonely", reason="test").outcome is EvictionOutcome.EVICTED
    with pytest.raises(NotFoundError):
        cluster.get_pod(NS, "lonely")
    assert len(cluster.list_pods()) == 2


def test_evicting_an_unknown_pod_is_not_found(cluster: InstrumentedCluster) -> None:
    result = cluster.evict_pod(NS, "ghost", reason="test")
    assert result.outcome is EvictionOutcome.NOT_FOUND
    assert cluster.evictions[-1].outcome is EvictionOutcome.NOT_FOUND


def test_a_pdb_allows_its_disruptions_then_refuses(cluster: InstrumentedCluster) -> None:
    cluster.add_pdb(
        PodDisruptionBudget(NS, "web-pdb", LabelSelector({"app": "web"}), disruptions_allowed=1)
    )
    first = cluster.evict_pod(NS, "web-a", reason="test")
    second = cluster.evict_pod(NS, "web-b", reason="test")
    assert first.outcome is EvictionOutcome.EVICTED
    assert second.outcome is EvictionOutcome.REFUSED
    assert "disruption budget" in second.message
    assert cluster.get_pdb(NS, "web-pdb").disruptions_allowed == 0
    assert cluster.get_pod(NS, "web-b").node_name == "n2"


def test_a_pdb_does_not_guard_pending_pods(cluster: InstrumentedCluster) -> None:
    cluster.add_pdb(PodDisruptionBudget(NS, "web-pdb", LabelSelector({"app": "web"})))
    cluster.add_pod(make_pod("web-pending", node=None))
    assert cluster.evict_pod(NS, "web-pending", reason="t").outcome is EvictionOutcome.EVICTED


def test_two_pdbs_for_one_pod_fail_the_eviction(cluster: InstrumentedCluster) -> None:
    for name in ("one", "two"):
        cluster.add_pdb(PodDisruptionBudget(NS, name, LabelSelector({"app": "web"}), 5))
    assert cluster.evict_pod(NS, "web-a", reason="t").outcome is EvictionOutcome.FAILED
    assert cluster.get_pod(NS, "web-a")


def test_injected_failures_raise_for_writes_and_fail_evictions(
    cluster: InstrumentedCluster,
) -> None:
    cluster.inject_failure(WriteKind.NODE_LABELS, TransientClusterError("api down"))
    cluster.inject_failure(WriteKind.EVICTIONS, TransientClusterError("api down"))
    with pytest.raises(TransientClusterError):
        cluster.patch_node_labels(NodeName("n1"), set_labels={"a": "b"})
    cluster.patch_node_labels(NodeName("n1"), set_labels={"a": "b"})
    failed = cluster.evict_pod(NS, "web-a", reason="t")
    assert (failed.outcome, failed.message) == (EvictionOutcome.FAILED, "api down")
    assert cluster.evict_pod(NS, "web-a", reason="t").outcome is EvictionOutcome.EVICTED


def test_writes_are_counted_per_kind_and_can_be_reset(cluster: InstrumentedCluster) -> None:
    key = cluster.apply_policy(policy_doc())
    cluster.patch_node_labels(NodeName("n1"), set_labels={"a": "b"})
    cluster.patch_pod_labels(NS, "web-a", set_labels={"a": "b"})
    cluster.set_node_taints(NodeName("n1"), [])
    cluster.update_policy_status(key, {"compliance": "Compliant"})
    cluster.emit_event(ObjectReference("Node", "n1"), reason="r", message="m")
    cluster.evict_pod(NS, "web-b", reason="t")
    assert dict(cluster.write_counts()) == dict.fromkeys(WriteKind, 1)
    assert cluster.total_writes() == len(WriteKind)
    cluster.reset_write_counts()
    assert cluster.total_writes() == 0


def test_setup_helpers_are_not_counted_as_writes() -> None:
    cluster = InstrumentedCluster()
    cluster.add_node(make_node("n1"))
    cluster.add_pod(make_pod("p", node=None))
    cluster.bind_pod(NS, "p", NodeName("n1"))
    cluster.apply_policy(policy_doc())
    assert cluster.total_writes() == 0


def test_listeners_hear_changes_until_they_unsubscribe(cluster: InstrumentedCluster) -> None:
    heard: list[ClusterChange] = []
    unsubscribe = cluster.subscribe(heard.append)
    cluster.patch_node_labels(NodeName("n1"), set_labels={"a": "b"})
    cluster.patch_node_labels(NodeName("n1"), set_labels={"a": "b"})  # no-op: no change
    key = cluster.apply_policy(policy_doc())
    cluster.evict_pod(NS, "web-a", reason="t")
    unsubscribe()
    cluster.delete_policy(key)
    assert heard[:3] == [
        ClusterChange(ResourceKind.NODE, ChangeType.MODIFIED, "n1"),
        ClusterChange(ResourceKind.POLICY, ChangeType.ADDED, "demo", "default"),
        ClusterChange(ResourceKind.POD, ChangeType.DELETED, "web-a", "default"),
    ]
    assert heard[3].kind is ResourceKind.POD
    assert heard[3].type is ChangeType.ADDED
    assert len(heard) == 4


def test_bind_pod_places_a_pending_pod_and_refuses_a_bound_one(
    cluster: InstrumentedCluster,
) -> None:
    cluster.add_pod(make_pod("p", node=None))
    bound = cluster.bind_pod(NS, "p", NodeName("n2"))
    assert (bound.node_name, bound.phase) == ("n2", "Running")
    with pytest.raises(Exception, match="already bound"):
        cluster.bind_pod(NS, "p", NodeName("n1"))


def test_concurrent_label_writers_lose_no_update(cluster: InstrumentedCluster) -> None:
    def writer(index: int) -> None:
        for round_ in range(50):
            cluster.patch_node_labels(NodeName("n1"), set_labels={f"w{index}": str(round_)})

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    labels = cluster.get_node(NodeName("n1")).labels
    assert {labels[f"w{i}"] for i in range(4)} == {"49"}
    assert cluster.write_counts()[WriteKind.NODE_LABELS] == 200


def test_update_node_replaces_it_and_keeps_other_nodes(cluster: InstrumentedCluster) -> None:
    cluster.update_node(replace(cluster.get_node(NodeName("n1")), ready=False))
    assert not cluster.get_node(NodeName("n1")).ready
    assert cluster.get_node(NodeName("n2")).ready
    cluster.remove_node(NodeName("n2"))
    assert [n.name for n in cluster.list_nodes()] == ["n1"]


def test_a_label_patch_can_carry_annotations_where_none_removes_one(
    cluster: InstrumentedCluster,
) -> None:
    cluster.patch_node_labels(NodeName("n1"), set_labels={}, annotations={"note": "a", "gone": "x"})
    cluster.patch_node_labels(NodeName("n1"), set_labels={"l": "1"}, annotations={"gone": None})
    node = cluster.get_node(NodeName("n1"))
    assert dict(node.annotations) == {"note": "a"}
    assert node.labels["l"] == "1"
