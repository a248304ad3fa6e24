"""The kube-scheduler model: places pending pods the way kube-scheduler does for the parts that
matter here, and asks the extender through `Extender` (HTTP in `make run`, `extender_client`).

What it does, in kube-scheduler's order: its own filters (`tas.fit`: Ready, schedulable, node
selector, required node affinity, NoSchedule/NoExecute taints, resource fit with
`telemetry/scheduling` ignored, pod count), then the extender's filter, then scores: a
least-allocated score (0..100) plus the extender's priority x weight x 10, as kube-scheduler
adds extender scores. An extender that fails is skipped when `ignorable` (kube-scheduler's
behaviour), otherwise the pod stays pending. Only pods that link a policy are sent to the
extender (`managedResources` on real clusters). The extender's answers are never trusted
beyond the nodes it was asked about.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from embedded.cluster import InMemoryCluster
from tas.cluster.interface import ClusterError
from tas.cluster.model import Node, Pod
from tas.fit import rejection, requested
from tas.rules import POLICY_LABEL
from tas.types import NodeName

log = logging.getLogger(__name__)


class ExtenderError(Exception):
    """The extender could not be asked, or answered something unusable."""


@dataclass(frozen=True)
class FilterAnswer:
    passed: Sequence[NodeName]
    #: Why each removed node was removed, as the extender said.
    failed: Mapping[str, str] = field(default_factory=dict)


class Extender(Protocol):
    """A scheduler extender as kube-scheduler sees it; raises `ExtenderError` on failure."""

    weight: int
    ignorable: bool

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer: ...

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]: ...


@dataclass(frozen=True)
class Placement:
    pod: str
    node: NodeName | None
    reason: str


def least_allocated(pod: Pod, node: Node, pods_on_node: Sequence[Pod]) -> float:
    """kube-scheduler's LeastAllocated score (0..100) over CPU and memory."""
    scores = []
    for resource in ("cpu", "memory"):
        capacity = node.allocatable.get(resource, 0.0)
        if capacity <= 0:
            continue
        wanted = requested(pods_on_node, resource) + pod.requests.get(resource, 0.0)
        scores.append(max(0.0, (capacity - wanted) / capacity) * 100)
    return sum(scores) / len(scores) if scores else 0.0


class EmbeddedScheduler:
    def __init__(self, cluster: InMemoryCluster, *, extender: Extender | None) -> None:
        self._cluster = cluster
        self._extender = extender

    def schedule_pending(self) -> list[Placement]:
        """One pass over pending pods; each is bound or stays pending with a reason."""
        placements = []
        for pod in self._cluster.list_pods():
            if pod.node_name is None and pod.phase == "Pending" and pod.deletion_timestamp is None:
                placements.append(self.schedule(pod))
        return placements

    def schedule(self, pod: Pod) -> Placement:
        nodes = {n.name: n for n in self._cluster.list_nodes()}
        on_node = self._pods_per_node()
        reasons: dict[str, str] = {}
        feasible: list[NodeName] = []
        for name, node in nodes.items():
            why = rejection(pod, node, pods_on_node=on_node.get(name, ()))
            if why is None:
                feasible.append(name)
            else:
                reasons[name] = why
        extender_scores: Mapping[NodeName, int] = {}
        extender = self._extender
        if feasible and extender is not None and POLICY_LABEL in pod.labels:
            try:
                answer = extender.filter(pod, feasible)
                asked = set(feasible)
                feasible = [n for n in feasible if n in set(answer.passed)]
                reasons.update({n: r for n, r in answer.failed.items() if n in asked})
                if feasible:
                    scores = extender.prioritize(pod, feasible)
                    extender_scores = {n: s for n, s in scores.items() if n in set(feasible)}
            except ExtenderError as error:
                if not extender.ignorable:
                    return self._pending(pod, f"extender failed: {error}")
                log.warning("Extender call failed, ignored (ignorable): %s", error)
        if not feasible:
            detail = "; ".join(f"{n}: {r}" for n, r in sorted(reasons.items()))
            return self._pending(pod, f"0/{len(nodes)} nodes are available: {detail}")
        weight = extender.weight if extender is not None else 0

        def total(name: NodeName) -> tuple[float, str]:
            node_score = least_allocated(pod, nodes[name], on_node.get(name, ()))
            return (node_score + extender_scores.get(name, 0) * weight * 10, name)

        best = max(feasible, key=total)
        try:
            self._cluster.bind_pod(pod.namespace, pod.name, best)
        except ClusterError as error:
            return self._pending(pod, f"binding failed: {error}")
        log.info("Scheduled %s/%s on %s", pod.namespace, pod.name, best)
        return Placement(f"{pod.namespace}/{pod.name}", best, "scheduled")

    def _pending(self, pod: Pod, reason: str) -> Placement:
        log.info("Pod %s/%s stays pending: %s", pod.namespace, pod.name, reason)
        return Placement(f"{pod.namespace}/{pod.name}", None, reason)

    def _pods_per_node(self) -> dict[NodeName, list[Pod]]:
        grouped: dict[NodeName, list[Pod]] = {}
        for pod in self._cluster.list_pods():
            if pod.node_name is not None:
                grouped.setdefault(pod.node_name, []).append(pod)
        return grouped
