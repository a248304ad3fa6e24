"""One cycle's view of the world: read once at the start, then only forgotten pods change.

Every strategy of a cycle decides on the same snapshot, so two strategies never disagree about
what they saw; a pod evicted by one strategy is taken out so no later one evicts it again.
The policies' deschedule rules are evaluated once per cycle too (`deschedule_evaluations`):
the circuit breaker judges that evaluation and TASViolations acts on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tas.breaker import nodes_with_values
from tas.cluster.model import Node, Pod, PodDisruptionBudget
from tas.fit import NodeLoad, holds_resources, node_load
from tas.policies.model import StrategyName, TASPolicy
from tas.rules import deschedule_violations, violation_reason
from tas.types import MetricColumns, MetricName, NodeName, PodKey, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL


def pod_key(pod: Pod) -> PodKey:
    return (pod.namespace, pod.name)


@dataclass(frozen=True, slots=True)
class DescheduleEvaluation:
    """One policy's deschedule rules over the in-scope nodes, on fresh metric values."""

    #: Violating nodes, each with why (`tas.rules.violation_reason`).
    violating: Mapping[NodeName, str]
    #: The nodes with a value for some metric of the rules (the breaker's share is over them).
    with_values: frozenset[NodeName]


def evaluate_deschedule(
    policies: Mapping[PolicyKey, TASPolicy], metrics: MetricColumns, nodes: Sequence[NodeName]
) -> dict[PolicyKey, DescheduleEvaluation]:
    """Every policy with a deschedule strategy, evaluated over `nodes`."""
    found: dict[PolicyKey, DescheduleEvaluation] = {}
    for key, policy in policies.items():
        strategy = policy.strategy(StrategyName.DESCHEDULE)
        if strategy is None:
            continue
        # Each column read once: the rules and the breaker's count see the same values.
        read = {name: metrics.get(name, {}) for name in {r.metricname for r in strategy.rules}}
        hits = deschedule_violations(policy, read, nodes)
        found[key] = DescheduleEvaluation(
            violating={node: violation_reason(policy.name, h) for node, h in hits.items()},
            with_values=nodes_with_values(strategy, read, nodes),
        )
    return found


@dataclass
class CycleState:
    #: In-scope nodes (matching the node selector), by name, Ready or not.
    nodes: Mapping[NodeName, Node]
    pods: Sequence[Pod]
    pdbs: Sequence[PodDisruptionBudget]
    policies: Mapping[PolicyKey, TASPolicy]
    metrics: MetricColumns
    now: datetime
    #: When each value of `metrics` was sampled (metric -> node -> Unix seconds), where the
    #: view says (`RefreshingMetricView.sample_times`); empty where it does not.
    sample_times: Mapping[MetricName, Mapping[NodeName, float]] = field(default_factory=dict)
    evicted: set[PodKey] = field(default_factory=set)
    #: The policies' deschedule evaluation; None until first asked for, then kept for the cycle.
    deschedule: Mapping[PolicyKey, DescheduleEvaluation] | None = None
    _by_node: tuple[int, dict[NodeName, list[Pod]]] | None = field(default=None, repr=False)
    _load: tuple[int, dict[NodeName, NodeLoad]] | None = field(default=None, repr=False)
    _all_by_node: dict[NodeName, list[Pod]] | None = field(default=None, repr=False)

    def deschedule_evaluations(self) -> Mapping[PolicyKey, DescheduleEvaluation]:
        """Each policy's deschedule rules over the in-scope nodes, evaluated once per cycle."""
        if self.deschedule is None:
            self.deschedule = evaluate_deschedule(self.policies, self.metrics, list(self.nodes))
        return self.deschedule

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
        """Pods per node, not evicted in this cycle: built once per cycle, and each eviction
        (`mark_evicted`) takes its pod out of its node's list (one added to `evicted` by other
        means rebuilds them)."""
        if self._by_node is None or self._by_node[0] != len(self.evicted):
            self._load = None
            found: dict[NodeName, list[Pod]] = {}
            for pod in self.pods:
                if pod.node_name is not None and self._present(pod):
                    found.setdefault(pod.node_name, []).append(pod)
            self._by_node = (len(self.evicted), found)
        return self._by_node[1]

    def mark_evicted(self, pod: Pod) -> None:
        """The pod is evicted (or would be, in a dry run) in this cycle: every later look at
        the cycle's pods leaves it out."""
        key = pod_key(pod)
        if key in self.evicted:
            return
        self.evicted.add(key)
        if self._by_node is not None and pod.node_name is not None:
            on_node = self._by_node[1].get(pod.node_name, [])
            on_node[:] = [p for p in on_node if pod_key(p) != key]
            self._by_node = (len(self.evicted), self._by_node[1])
        if self._load is not None and pod.node_name is not None and self._by_node is not None:
            self._load[1][pod.node_name] = node_load(self._by_node[1].get(pod.node_name, ()))
            self._load = (len(self.evicted), self._load[1])

    def load_by_node(self) -> Mapping[NodeName, NodeLoad]:
        """What the pods of `pods_by_node` hold per node (`tas.fit.node_load`), summed once
        per cycle and kept current by `mark_evicted`: nodeFit asks it of every node per pod."""
        by_node = self.pods_by_node()
        if self._load is None:
            loads = {node: node_load(pods) for node, pods in by_node.items()}
            self._load = (len(self.evicted), loads)
        return self._load[1]

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
