"""One cycle's view of the world: read once at the start, then only forgotten pods change.

Every strategy of a cycle decides on the same snapshot, so two strategies never disagree about
what they saw; a pod evicted by one strategy is taken out so no later one evicts it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tas.cluster.model import Node, Pod, PodDisruptionBudget
from tas.fit import holds_resources
from tas.policies.model import TASPolicy
from tas.types import MetricColumns, Namespace, NodeName, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL

PodKey = tuple[Namespace, str]


def pod_key(pod: Pod) -> PodKey:
    return (pod.namespace, pod.name)


@dataclass
class CycleState:
    #: In-scope nodes (matching the node selector), by name, Ready or not.
    nodes: Mapping[NodeName, Node]
    pods: Sequence[Pod]
    pdbs: Sequence[PodDisruptionBudget]
    policies: Mapping[PolicyKey, TASPolicy]
    metrics: MetricColumns
    now: datetime
    evicted: set[PodKey] = field(default_factory=set)
    _by_node: tuple[int, dict[NodeName, list[Pod]]] | None = field(default=None, repr=False)
    _all_by_node: dict[NodeName, list[Pod]] | None = field(default=None, repr=False)

    @property
    def ready_nodes(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.ready]

    def _present(self, pod: Pod) -> bool:
        # A Succeeded pod holds nothing and is going nowhere: no strategy looks at it.
        return pod.phase != "Succeeded" and pod_key(pod) not in self.evicted

    def pods_on(self, node: NodeName) -> list[Pod]:
        """Pods bound to the node and not evicted in this cycle."""
        return list(self.pods_by_node().get(node, ()))

    def pods_by_node(self) -> Mapping[NodeName, Sequence[Pod]]:
        """Pods per node, not evicted in this cycle (rebuilt only after an eviction)."""
        if self._by_node is None or self._by_node[0] != len(self.evicted):
            found: dict[NodeName, list[Pod]] = {}
            for pod in self.pods:
                if pod.node_name is not None and self._present(pod):
                    found.setdefault(pod.node_name, []).append(pod)
            self._by_node = (len(self.evicted), found)
        return self._by_node[1]

    def running_in_scope(self) -> list[Pod]:
        """Pods on in-scope nodes, not yet evicted, in a stable order."""
        return [p for p in self.pods if p.node_name in self.nodes and self._present(p)]

    def pods_on_ready_node(self, node: NodeName, *, include_finished: bool = False) -> list[Pod]:
        """Pods bound to the node, not evicted in this cycle, in a stable order.

        Without `include_finished`, Succeeded and Failed pods are left out (upstream's
        `ListPodsOnANode`: they hold no resources); with it every phase is kept (upstream's
        `ListAllPodsOnANode`, which PodLifeTime, RemoveFailedPods and the restarts plugin use).
        """
        if self._all_by_node is None:
            every: dict[NodeName, list[Pod]] = {}
            for pod in self.pods:
                if pod.node_name is not None:
                    every.setdefault(pod.node_name, []).append(pod)
            self._all_by_node = every
        return [
            p
            for p in self._all_by_node.get(node, ())
            if pod_key(p) not in self.evicted and (include_finished or holds_resources(p))
        ]

    def ready_node_pods(self, *, include_finished: bool = False) -> list[Pod]:
        """Pods on the Ready in-scope nodes, node by node (the upstream plugins' view)."""
        return [
            pod
            for node in self.ready_nodes
            for pod in self.pods_on_ready_node(node.name, include_finished=include_finished)
        ]

    def policy_of(self, pod: Pod) -> TASPolicy | None:
        """The TASPolicy the pod links (label telemetry-policy, in the pod's own namespace)."""
        name = pod.labels.get(POLICY_LABEL)
        if not name:
            return None
        return self.policies.get(PolicyKey(pod.namespace, PolicyName(name)))
