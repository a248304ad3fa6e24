"""End-to-end: the Kubernetes adapter against a real cluster (kind), opt-in.

Runs only with TAS_E2E=1 and KUBECONFIG pointing at a disposable cluster where the TASPolicy
CRD is installed (`kubectl apply -f crds/`); see docs/cluster.md. Covered:
- the caches sync and see the cluster's nodes;
- a TASPolicy created through the API reaches the policy cache, and its status written through
  the status subresource reads back;
- a node label set through the adapter is visible to another client and is removed again.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from tas.adapters.cluster.kubeconfig import load_api_client
from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.types import Namespace, PolicyKey, PolicyName
from tests import waiting

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        os.environ.get("TAS_E2E") != "1" or not os.environ.get("KUBECONFIG"),
        reason="opt-in: set TAS_E2E=1 and KUBECONFIG to a disposable cluster",
    ),
]

NAMESPACE = "default"


@pytest.fixture(scope="module")
def cluster() -> Iterator[KubernetesCluster]:
    kubeconfig = Path(os.environ["KUBECONFIG"].split(os.pathsep)[0])
    cluster = KubernetesCluster(load_api_client(kubeconfig), watch_timeout=30)
    cluster.start()
    assert cluster.wait_synced(30)
    yield cluster
    cluster.stop()


def test_the_caches_see_the_clusters_nodes(cluster: KubernetesCluster) -> None:
    assert cluster.list_nodes()
    assert any(node.ready for node in cluster.list_nodes())


def test_a_policy_is_seen_and_its_status_reads_back(cluster: KubernetesCluster) -> None:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    api = client.CustomObjectsApi(config.new_client_from_config())
    body = {
        "apiVersion": "telemetry.intel.com/v1alpha1",
        "kind": "TASPolicy",
        "metadata": {"name": name},
        "spec": {
            "strategies": {
                "deschedule": {"rules": [{"metricname": "m", "operator": "Equals", "target": 2}]}
            }
        },
    }
    api.create_namespaced_custom_object(
        "telemetry.intel.com", "v1alpha1", NAMESPACE, "taspolicies", body
    )
    try:
        key = PolicyKey(Namespace(NAMESPACE), PolicyName(name))
        waiting.eventually(
            lambda: any(d.key == key for d in cluster.list_policy_documents()),
            30,
            what="the new TASPolicy listed",
        )
        cluster.update_policy_status(key, {"compliance": "Compliant", "message": "e2e"})
        stored = api.get_namespaced_custom_object(
            "telemetry.intel.com", "v1alpha1", NAMESPACE, "taspolicies", name
        )
        assert stored["status"]["compliance"] == "Compliant"
    finally:
        api.delete_namespaced_custom_object(
            "telemetry.intel.com", "v1alpha1", NAMESPACE, "taspolicies", name
        )


def test_a_node_label_is_set_and_removed(cluster: KubernetesCluster) -> None:
    from kubernetes import client, config

    node = cluster.list_nodes()[0].name
    key = "e2e.telemetry.aware.scheduling/probe"
    core = client.CoreV1Api(config.new_client_from_config())
    cluster.patch_node_labels(node, set_labels={key: "yes"})
    try:
        assert core.read_node(node).metadata.labels.get(key) == "yes"
    finally:
        cluster.patch_node_labels(node, set_labels={}, remove=[key])
    assert key not in (core.read_node(node).metadata.labels or {})
