"""The health demo against the Kubernetes adapter and the API emulator (real client, real HTTP).

Covered, end to end through `KubernetesCluster` (watch caches, merge patches, the status
subresource, core/v1 Events):
- C set to 2: C gets `demo-policy=violating` (and the owned-labels annotation), the demo pod on
  C gets `violate=demo-policy`, the status says Violating with C listed, a warning Event;
- a steady cycle sends no write at all;
- C back to 0: both labels go, status Compliant;
- dropping `deschedule` removes its labels; deleting the policy leaves no label of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from policy_controller.settings import ControllerSettings
from tas.adapters.cluster.informer import Backoff
from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.store import PolicyStore
from tas.vocabulary import OWNED_ANNOTATION
from tests.builders import ManualClock, health_policy_document
from tests.k8s_emulator import KubeEmulator
from tests.policy_controller.support import DEMO_NAMESPACE, AgingMetricView
from tests.waiting import eventually


def pod(name: str, node: str, policy: str | None = "demo-policy") -> dict[str, Any]:
    labels = {"app": "demo"} | ({"telemetry-policy": policy} if policy else {})
    return {
        "metadata": {"name": name, "namespace": DEMO_NAMESPACE, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": "Running"},
    }


class Controller:
    def __init__(self, api: KubeEmulator, cluster: KubernetesCluster) -> None:
        self.api = api
        self.cluster = cluster
        self.view = AgingMetricView(max_age=30)
        self.view.set("health_metric", {"A": 0, "B": 1, "C": 0})
        self.store = PolicyStore()
        self.loader = ClusterPolicyLoader(cluster, self.store)
        self.reconciler = Reconciler(
            cluster=cluster,
            policies=self.store,
            metric_view=self.view,
            metrics=ControllerMetrics(CollectorRegistry()),
            settings=ControllerSettings(status_refresh_cycles=0),
            clock=ManualClock(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        )

    def reconcile(self) -> None:
        self.loader.sync()
        assert self.reconciler.reconcile().ran

    def node_labels(self, name: str) -> dict[str, str]:
        node = self.api.get("nodes", name)
        assert node is not None
        return dict(node["metadata"].get("labels") or {})

    def pod_labels(self, name: str) -> dict[str, str]:
        found = self.api.get("pods", name, namespace=DEMO_NAMESPACE)
        assert found is not None
        return dict(found["metadata"].get("labels") or {})

    def status(self) -> dict[str, Any]:
        policy = self.api.get("taspolicies", "demo-policy", namespace=DEMO_NAMESPACE)
        assert policy is not None
        return dict(policy.get("status") or {})


@pytest.fixture
def controller(kube_emulator: KubeEmulator) -> Iterator[Controller]:
    api = kube_emulator
    for name in ("A", "B", "C"):
        api.create("nodes", {"metadata": {"name": name, "labels": {"zone": "z1"}}})
    api.create("pods", pod("demo-1", "C"))
    api.create("pods", pod("demo-2", "A"))
    api.create("pods", pod("bystander", "C", policy=None))
    api.create("taspolicies", health_policy_document())
    cluster = KubernetesCluster(
        api.api_client(),
        watch_timeout=2.0,
        backoff=lambda: Backoff(initial=0.05, maximum=0.2, jitter=0),
    )
    cluster.start()
    try:
        assert cluster.wait_synced(5)
        yield Controller(api, cluster)
    finally:
        cluster.stop()


def test_the_health_demo_runs_end_to_end_on_the_kubernetes_adapter(controller: Controller) -> None:
    api = controller.api
    controller.reconcile()

    controller.view.set("health_metric", {"C": 2})
    controller.reconcile()
    assert controller.node_labels("C") == {"zone": "z1", "demo-policy": "violating"}
    node_c = api.get("nodes", "C")
    assert node_c is not None
    assert node_c["metadata"]["annotations"][OWNED_ANNOTATION] == '["demo-policy"]'
    assert controller.pod_labels("demo-1")["violate"] == "demo-policy"
    assert "violate" not in controller.pod_labels("demo-2")
    assert "violate" not in controller.pod_labels("bystander")
    status = controller.status()
    assert status["compliance"] == "Violating"
    assert status["violatingNodes"]["deschedule"] == ["C"]
    assert status["violatingNodeCount"] == 2
    events = [e for e in api.objects("events") if e["reason"] == "TASPolicyViolated"]
    assert [(e["involvedObject"]["name"], e["type"]) for e in events] == [("C", "Warning")]

    # The watch caches catch up with our own writes; then a cycle has nothing to send.
    api.clear_requests()
    controller.reconcile()
    assert [(r.method, r.path) for r in api.writes()] == []

    # B back to 0 too: at 1 it violates dontschedule, which also makes the policy Violating.
    controller.view.set("health_metric", {"B": 0, "C": 0})
    controller.reconcile()
    assert controller.node_labels("C") == {"zone": "z1"}
    assert "violate" not in controller.pod_labels("demo-1")
    assert controller.status()["compliance"] == "Compliant"


def test_dropping_deschedule_and_deleting_the_policy_remove_its_labels(
    controller: Controller,
) -> None:
    api = controller.api
    controller.view.set("health_metric", {"A": 0, "C": 2})
    controller.reconcile()
    assert controller.node_labels("C")["demo-policy"] == "violating"

    api.merge(
        "taspolicies",
        "demo-policy",
        {"spec": {"strategies": {"deschedule": None}}},
        namespace=DEMO_NAMESPACE,
    )
    eventually(lambda: controller.loader.sync() or "deschedule" not in _strategies(controller))
    controller.reconcile()
    for name in ("A", "B", "C"):
        assert "demo-policy" not in controller.node_labels(name)
    assert "violate" not in controller.pod_labels("demo-1")

    api.merge(
        "taspolicies",
        "demo-policy",
        {"spec": {"strategies": health_policy_document()["spec"]["strategies"]}},
        namespace=DEMO_NAMESPACE,
    )
    eventually(lambda: controller.loader.sync() or "deschedule" in _strategies(controller))
    controller.reconcile()
    assert controller.node_labels("C")["demo-policy"] == "violating"

    api.delete("taspolicies", "demo-policy", namespace=DEMO_NAMESPACE)
    eventually(lambda: not controller.cluster.list_policy_documents())
    controller.reconcile()
    for node in api.objects("nodes"):
        assert "demo-policy" not in (node["metadata"].get("labels") or {})
        assert OWNED_ANNOTATION not in (node["metadata"].get("annotations") or {})
    for found in api.objects("pods", namespace=DEMO_NAMESPACE):
        assert "violate" not in (found["metadata"].get("labels") or {})


def _strategies(controller: Controller) -> set[str]:
    return {
        str(name)
        for policy in controller.store.snapshot().policies.values()
        for name in policy.strategies
    }
