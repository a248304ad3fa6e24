"""The Kubernetes adapter, driven through the official client against the API emulator over HTTP.

Covered:
- start-up: every cache lists once and `wait_synced` returns; API objects become model values
  (readiness, allocatable, taints, requests, owners, PDB budget, policy documents);
- `wait_synced` is False when the API cannot be listed;
- watches: changes by other clients reach the cache and the listeners without another LIST;
  a resourceVersion that expired (410) leads to a fresh LIST whose differences are reported;
  a failing API is retried with growing backoff delays;
- a pod field selector limits the pod cache;
- label patches: one merge patch of only our keys (null removes), other writers' labels kept,
  the cache updated at once, no request when there is nothing to change, 404 NotFoundError;
- taints: a JSON patch guarded by a `test` of the cached resourceVersion; a node that moved
  since is a ConflictError and nothing is lost;
- policy status through the status subresource, replaced whole, spec untouched;
- core/v1 events; evictions EVICTED, REFUSED (PDB, 429), NOT_FOUND (404);
- API failures map to TransientClusterError; a write to an API server that stops answering
  fails within its deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.cluster.interface import (
    ChangeType,
    ClusterChange,
    ConflictError,
    EvictionOutcome,
    NotFoundError,
    ResourceKind,
    TransientClusterError,
)
from tas.cluster.model import ObjectReference, OwnerReference, QoSClass, Taint, TaintEffect
from tas.types import Namespace, NodeName, PolicyKey, PolicyName
from tas.vocabulary import OWNED_ANNOTATION
from tests.builders import policy_document, rule
from tests.k8s_emulator import KubeEmulator
from tests.processes import black_hole
from tests.waiting import eventually

NS = Namespace("default")
POLICY_PATH = "/apis/telemetry.intel.com/v1alpha1/namespaces/default/taspolicies/demo"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, node_name: str | None = "n1", phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app": "web", "telemetry-policy": "demo"},
            "ownerReferences": [
                {"kind": "ReplicaSet", "name": "web-rs", "uid": "rs-1", "controller": True}
            ],
        },
        "spec": {
            "nodeName": node_name,
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
            ],
        },
        "status": {"phase": phase},
    }


def policy(name: str = "demo") -> dict[str, Any]:
    return policy_document(name, deschedule=[rule("m", "Equals", 2)])


def pdb(allowed: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": allowed},
    }


@pytest.fixture
def api(kube_emulator: KubeEmulator) -> KubeEmulator:
    kube_emulator.create("nodes", node("n1", zone="a"))
    kube_emulator.create("nodes", node("n2", zone="b"))
    kube_emulator.create("pods", pod("web-1"))
    kube_emulator.create("pods", pod("web-2", "n2"))
    kube_emulator.create("taspolicies", policy())
    kube_emulator.create("poddisruptionbudgets", pdb(1))
    return kube_emulator


Start = Callable[..., KubernetesCluster]


@pytest.fixture
def cluster(start: Start) -> KubernetesCluster:
    cluster = start()
    assert cluster.wait_synced(5)
    return cluster


def test_start_up_lists_each_resource_once_into_model_values(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    n1, n2 = cluster.list_nodes()
    assert (n1.name, n1.ready, n1.labels) == ("n1", True, {"zone": "a"})
    assert (n2.name, n2.labels) == ("n2", {"zone": "b"})
    assert n1.allocatable == {"cpu": 4.0, "memory": 8 * 2**30, "pods": 110.0}
    assert n1.taints == (Taint("dedicated", TaintEffect.NO_SCHEDULE, "db"),)
    web1 = cluster.list_pods(node=NodeName("n1"))[0]
    assert web1.name == "web-1"
    assert web1.requests == {"cpu": 0.5, "memory": 64 * 2**20}
    assert web1.qos_class is QoSClass.BURSTABLE
    assert web1.owners == (OwnerReference("ReplicaSet", "web-rs", "rs-1", controller=True),)
    (document,) = cluster.list_policy_documents()
    assert document.key == PolicyKey(NS, PolicyName("demo"))
    assert document.body["spec"] == policy()["spec"]
    (budget,) = cluster.list_pdbs()
    assert (budget.name, budget.disruptions_allowed) == ("web", 1)
    lists = [r.path for r in api.requests if r.method == "GET" and not r.is_watch]
    assert sorted(lists) == [
        "/api/v1/nodes",
        "/api/v1/pods",
        "/apis/policy/v1/poddisruptionbudgets",
        "/apis/telemetry.intel.com/v1alpha1/taspolicies",
    ]


def test_wait_synced_is_false_while_the_api_cannot_be_listed(
    api: KubeEmulator, start: Start
) -> None:
    api.fail_next(r"^/api/v1/nodes$", status=503, times=1000)
    cluster = start()
    assert not cluster.wait_synced(0.5)


def test_changes_by_other_clients_reach_cache_and_listeners_without_a_new_list(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    heard: list[ClusterChange] = []
    cluster.subscribe(heard.append)
    api.merge("nodes", "n2", {"metadata": {"labels": {"zone": "c"}}})
    api.create("pods", pod("web-3", None, "Pending"))
    api.delete("taspolicies", "demo", namespace="default")
    eventually(lambda: len(heard) >= 3)
    # Each resource has its own watch thread: the order across resources is not defined.
    assert set(heard) == {
        ClusterChange(ResourceKind.NODE, ChangeType.MODIFIED, "n2"),
        ClusterChange(ResourceKind.POD, ChangeType.ADDED, "web-3", "default"),
        ClusterChange(ResourceKind.POLICY, ChangeType.DELETED, "demo", "default"),
    }
    assert cluster.list_nodes()[1].labels == {"zone": "c"}
    assert [p.name for p in cluster.list_pods() if p.node_name is None] == ["web-3"]
    assert cluster.list_policy_documents() == []
    assert all(informer.lists == 1 for informer in cluster.informers)


def test_an_expired_resource_version_leads_to_a_new_list_and_reports_the_difference(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    heard: list[ClusterChange] = []
    cluster.subscribe(heard.append)
    api.fail_next(r"^/api/v1/nodes$", status=503, times=1)  # keep the watch away for a moment
    api.break_watches()
    api.compact()
    api.delete("nodes", "n1")
    api.set_history_window(0)
    api.create("nodes", node("n3"))
    eventually(lambda: [n.name for n in cluster.list_nodes()] == ["n2", "n3"])
    nodes_informer = cluster.informers[0]
    assert nodes_informer.lists >= 2
    node_changes = {(c.type, c.name) for c in heard if c.kind is ResourceKind.NODE}
    assert {(ChangeType.DELETED, "n1"), (ChangeType.ADDED, "n3")} <= node_changes


def test_a_failing_api_is_retried_with_growing_delays(api: KubeEmulator, start: Start) -> None:
    delays: list[float] = []

    def sleep(delay: float) -> None:
        delays.append(delay)

    api.fail_next(r"^/api/v1/nodes$", status=503, times=3)
    cluster = start(sleep=sleep)
    assert cluster.wait_synced(5)
    assert delays[:3] == [0.05, 0.1, 0.2]


def test_a_pod_field_selector_limits_the_pod_cache(api: KubeEmulator, start: Start) -> None:
    api.create("pods", pod("done", phase="Succeeded"))
    cluster = start(pod_field_selector="status.phase!=Succeeded")
    assert cluster.wait_synced(5)
    assert [p.name for p in cluster.list_pods()] == ["web-1", "web-2"]


def test_label_patches_send_only_our_keys_and_keep_other_writers_labels(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    api.merge("nodes", "n1", {"metadata": {"labels": {"demo": "violating", "theirs": "x"}}})
    eventually(lambda: "theirs" in cluster.list_nodes()[0].labels)
    api.clear_requests()
    cluster.patch_node_labels(NodeName("n1"), set_labels={"other": "1"}, remove=["demo"])
    (write,) = api.writes()
    assert (write.method, write.path, write.content_type) == (
        "PATCH",
        "/api/v1/nodes/n1",
        "application/merge-patch+json",
    )
    assert write.body == {"metadata": {"labels": {"demo": None, "other": "1"}}}
    assert cluster.list_nodes()[0].labels == {"zone": "a", "theirs": "x", "other": "1"}
    stored = api.get("nodes", "n1")
    assert stored is not None
    assert stored["metadata"]["labels"] == {"zone": "a", "theirs": "x", "other": "1"}
    cluster.patch_pod_labels(NS, "web-1", set_labels={"violate": "demo"})
    assert cluster.list_pods()[0].labels["violate"] == "demo"


def test_a_patch_with_nothing_to_change_sends_nothing(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    api.clear_requests()
    cluster.patch_node_labels(NodeName("n1"), set_labels={})
    cluster.patch_pod_labels(NS, "web-1", set_labels={}, remove=())
    assert api.writes() == []


def test_patching_an_unknown_node_is_not_found(cluster: KubernetesCluster) -> None:
    with pytest.raises(NotFoundError):
        cluster.patch_node_labels(NodeName("ghost"), set_labels={"a": "b"})


def test_taints_are_replaced_with_a_resource_version_test(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    hot = Taint("tas/overutilized", TaintEffect.PREFER_NO_SCHEDULE, "true")
    version = cluster.list_nodes()[0].resource_version
    api.clear_requests()
    cluster.set_node_taints(NodeName("n1"), [hot])
    (write,) = api.writes()
    assert write.content_type == "application/json-patch+json"
    assert write.body[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": version}
    assert cluster.list_nodes()[0].taints == (hot,)
    stored = api.get("nodes", "n1")
    assert stored is not None
    assert stored["spec"]["taints"] == [
        {"key": "tas/overutilized", "value": "true", "effect": "PreferNoSchedule"}
    ]


def test_a_taint_write_on_a_node_that_moved_is_a_conflict_and_loses_nothing(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    cluster.stop()  # freeze the cache so it is stale for sure
    theirs = [{"key": "maintenance", "effect": "NoSchedule"}]
    api.merge("nodes", "n1", {"spec": {"taints": theirs}})
    with pytest.raises(ConflictError):
        cluster.set_node_taints(NodeName("n1"), [])
    stored = api.get("nodes", "n1")
    assert stored is not None
    assert stored["spec"]["taints"] == theirs


def test_policy_status_goes_to_the_status_subresource_and_replaces_it(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    key = PolicyKey(NS, PolicyName("demo"))
    cluster.update_policy_status(key, {"compliance": "Violating", "violating": ["n1"]})
    cluster.update_policy_status(key, {"compliance": "Compliant"})
    assert [w.path for w in api.writes()] == [f"{POLICY_PATH}/status"] * 2
    stored = api.get("taspolicies", "demo", namespace="default")
    assert stored is not None
    assert stored["status"] == {"compliance": "Compliant"}
    assert stored["spec"] == policy()["spec"]
    (document,) = cluster.list_policy_documents()
    assert document.body["status"] == {"compliance": "Compliant"}


def test_updating_the_status_of_a_missing_policy_is_not_found(cluster: KubernetesCluster) -> None:
    with pytest.raises(NotFoundError):
        cluster.update_policy_status(PolicyKey(NS, PolicyName("ghost")), {})


def test_events_are_created_in_the_objects_namespace(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    about = ObjectReference("Pod", "web-1", "default", uid="u1")
    cluster.emit_event(about, reason="Evicted", message="demo violated", warning=True)
    (event,) = api.objects("events", namespace="default")
    assert event["involvedObject"]["name"] == "web-1"
    assert (event["reason"], event["type"], event["message"]) == (
        "Evicted",
        "Warning",
        "demo violated",
    )
    assert event["metadata"]["name"].startswith("web-1.")


def test_evictions_map_the_api_answers_to_outcomes(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    first = cluster.evict_pod(NS, "web-1", reason="demo violated on n1")
    refused = cluster.evict_pod(NS, "web-2", reason="demo violated on n2")
    missing = cluster.evict_pod(NS, "web-1", reason="again")
    assert first.outcome is EvictionOutcome.EVICTED
    assert refused.outcome is EvictionOutcome.REFUSED
    assert "disruption budget" in refused.message
    assert missing.outcome is EvictionOutcome.NOT_FOUND
    assert [w.path for w in api.writes()] == [
        "/api/v1/namespaces/default/pods/web-1/eviction",
        "/api/v1/namespaces/default/pods/web-2/eviction",
        "/api/v1/namespaces/default/pods/web-1/eviction",
    ]
    eventually(lambda: [p.name for p in cluster.list_pods()] == ["web-2"])


def test_an_eviction_the_api_fails_is_failed(api: KubeEmulator, cluster: KubernetesCluster) -> None:
    api.fail_next(r"/eviction$", status=500)
    assert cluster.evict_pod(NS, "web-1", reason="t").outcome is EvictionOutcome.FAILED


def test_server_errors_are_transient(api: KubeEmulator, cluster: KubernetesCluster) -> None:
    api.fail_next(r"^/api/v1/nodes/n1$", status=503)
    with pytest.raises(TransientClusterError):
        cluster.patch_node_labels(NodeName("n1"), set_labels={"a": "b"})


def test_annotations_travel_in_the_same_label_patch(
    api: KubeEmulator, cluster: KubernetesCluster
) -> None:
    api.clear_requests()
    cluster.patch_node_labels(
        NodeName("n1"),
        set_labels={"a": "1"},
        annotations={OWNED_ANNOTATION: "a", "note": "x", "old": None},
    )
    (write,) = api.writes()
    assert write.body == {
        "metadata": {
            "labels": {"a": "1"},
            "annotations": {OWNED_ANNOTATION: "a", "note": "x", "old": None},
        }
    }
    stored = api.get("nodes", "n1")
    assert stored is not None
    assert stored["metadata"]["annotations"] == {OWNED_ANNOTATION: "a", "note": "x"}
    # The cache keeps only the annotations a component reads.
    assert cluster.list_nodes()[0].annotations == {OWNED_ANNOTATION: "a"}


def test_a_write_to_an_api_server_that_stops_answering_fails_within_its_deadline(
    kube_emulator: KubeEmulator,
) -> None:
    """A hung API server fails the call (to be retried next cycle), never blocks a cycle."""
    api_client = kube_emulator.api_client()
    cluster = KubernetesCluster(api_client, request_timeout=0.3, watched=[])
    with black_hole() as url:  # accepts connections (into its backlog), never answers
        api_client.configuration.host = url

        began = time.monotonic()
        with pytest.raises(TransientClusterError, match="patch labels of node n1"):
            cluster.patch_node_labels(NodeName("n1"), set_labels={"a": "b"})
        result = cluster.evict_pod(Namespace("default"), "web-0", reason="test")
        seconds = time.monotonic() - began

    assert result.outcome is EvictionOutcome.FAILED
    assert seconds < 2.0
