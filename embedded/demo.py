"""The health-metric demo's cluster: three nodes and the demo app, as TAS's demo ships it."""

from __future__ import annotations

from pathlib import Path

from embedded.cluster import InMemoryCluster
from tas.cluster.model import Node, NodeSelectorTerm, OwnerReference, Pod, QoSClass, Requirement
from tas.metrics.textfile import write_node_metric
from tas.types import Namespace, NodeName
from tas.vocabulary import POLICY_LABEL, TELEMETRY_RESOURCE, VIOLATING

NAMESPACE = Namespace("health-metric-demo")
POLICY = "demo-policy"
NODES = (NodeName("node-a"), NodeName("node-b"), NodeName("node-c"))
#: The demo's starting values: node-b is unhealthy enough not to take new pods.
START_HEALTH = {NodeName("node-a"): 0.0, NodeName("node-b"): 1.0, NodeName("node-c"): 0.0}
HEALTH_SERIES = "node_health_metric"


def write_start_metrics(directory: Path) -> None:
    for node, value in START_HEALTH.items():
        write_node_metric(directory, node, HEALTH_SERIES, value)


def demo_pod(index: int) -> Pod:
    """A pending demo-app pod, owned by its ReplicaSet so an evicted one comes back."""
    return Pod(
        namespace=NAMESPACE,
        name=f"demo-app-6558d5ffbf-{index:05d}",
        labels={"app": "demo", POLICY_LABEL: POLICY},
        node_name=None,
        phase="Pending",
        owners=(OwnerReference("ReplicaSet", "demo-app-6558d5ffbf", "rs-demo", controller=True),),
        qos_class=QoSClass.BURSTABLE,
        requests={"cpu": 0.1, "memory": 64 * 2**20, TELEMETRY_RESOURCE: 1.0},
        required_node_affinity=(
            NodeSelectorTerm(match_expressions=(Requirement(POLICY, "NotIn", (VIOLATING,)),)),
        ),
    )


def build_demo_cluster(replicas: int = 3) -> InMemoryCluster:
    cluster = InMemoryCluster()
    for node in NODES:
        cluster.add_node(
            Node(
                name=node,
                labels={"kubernetes.io/hostname": node, "kubernetes.io/os": "linux"},
                allocatable={"cpu": 4.0, "memory": 8 * 2**30, "pods": 110.0},
            )
        )
    for index in range(replicas):
        cluster.add_pod(demo_pod(index))
    return cluster
