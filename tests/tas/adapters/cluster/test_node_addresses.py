"""Each node's `status.addresses` beside the node cache (`tas.cluster.node_addresses`), through
the Kubernetes adapter against the API emulator.

Covers: every listed node with its addresses in the API's order (a node without any named
too); an address change reaching the table through the watch; a change that leaves the
addresses alone (a label) keeping the very same snapshot; a deleted node forgotten; no
addresses at all when nodes are not watched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.cluster.interface import ResourceKind
from tas.cluster.node_addresses import NodeAddress
from tas.types import NodeName
from tests.k8s_emulator import KubeEmulator
from tests.waiting import eventually


def node(name: str, *addresses: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"addresses": [{"type": t, "address": a} for t, a in addresses]},
    }


@pytest.fixture
def cluster(kube_emulator: KubeEmulator) -> Iterator[KubernetesCluster]:
    kube_emulator.create(
        "nodes",
        node("n1", ("InternalIP", "10.0.0.1"), ("Hostname", "n1"), ("InternalIP", "fd00::1")),
    )
    kube_emulator.create("nodes", node("n2"))
    cluster = KubernetesCluster(kube_emulator.api_client(), watched=[ResourceKind.NODE])
    cluster.start()
    assert cluster.wait_synced(10.0)
    yield cluster
    cluster.stop()


def test_every_listed_node_comes_with_its_addresses_in_the_apis_order(
    cluster: KubernetesCluster,
) -> None:
    assert cluster.node_addresses() == {
        NodeName("n1"): (
            NodeAddress("InternalIP", "10.0.0.1"),
            NodeAddress("Hostname", "n1"),
            NodeAddress("InternalIP", "fd00::1"),
        ),
        NodeName("n2"): (),
    }


def test_an_address_change_arrives_through_the_watch_and_a_label_change_keeps_the_snapshot(
    cluster: KubernetesCluster, kube_emulator: KubeEmulator
) -> None:
    before = cluster.node_addresses()
    kube_emulator.merge("nodes", "n2", {"metadata": {"labels": {"zone": "a"}}})
    eventually(lambda: (found := cluster.find_node("n2")) is not None and "zone" in found.labels)
    assert cluster.node_addresses() is before
    kube_emulator.merge("nodes", "n2", node("n2", ("InternalIP", "10.0.0.2")), status=True)
    eventually(lambda: cluster.node_addresses().get(NodeName("n2")) != ())
    assert cluster.node_addresses()[NodeName("n2")] == (NodeAddress("InternalIP", "10.0.0.2"),)


def test_a_deleted_node_is_forgotten(
    cluster: KubernetesCluster, kube_emulator: KubeEmulator
) -> None:
    kube_emulator.delete("nodes", "n1")
    eventually(lambda: NodeName("n1") not in cluster.node_addresses())
    assert set(cluster.node_addresses()) == {"n2"}


def test_a_cluster_that_does_not_watch_nodes_has_no_addresses(
    kube_emulator: KubeEmulator,
) -> None:
    kube_emulator.create("nodes", node("n1", ("InternalIP", "10.0.0.1")))
    cluster = KubernetesCluster(kube_emulator.api_client(), watched=[])
    assert cluster.node_addresses() == {}
