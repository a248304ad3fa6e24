"""A small scheduler for the embedded cluster: places pending pods the way kube-scheduler does
for the parts that matter here, and calls the extender over HTTP with the exact wire format.

What it does, in kube-scheduler's order: its own filters (Ready, schedulable, node selector,
required node affinity, NoSchedule/NoExecute taints, resource fit with `telemetry/scheduling`
ignored), then the extender's filter, then scores: a least-allocated score (0..100) plus the
extender's priority x weight x 10, as kube-scheduler adds extender scores. An extender that
fails is skipped when `ignorable` (kube-scheduler's behaviour), otherwise the pod stays pending.
Only pods that link a policy are sent to the extender (`managedResources` on real clusters).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import httpx

from tas.cluster.interface import ClusterError
from tas.cluster.memory import InMemoryCluster
from tas.cluster.model import TELEMETRY_RESOURCE, Node, Pod, TaintEffect
from tas.rules import POLICY_LABEL
from tas.types import NodeName

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExtenderConfig:
    url: str
    weight: int = 5
    ignorable: bool = True
    timeout: float = 5.0


@dataclass(frozen=True)
class Placement:
    pod: str
    node: NodeName | None
    reason: str


def fits(pod: Pod, node: Node, used: Mapping[str, float]) -> str | None:
    """Why `pod` cannot go to `node` (None when it can), by kube-scheduler's own filters."""
    if not node.ready:
        return "node is not Ready"
    if node.unschedulable:
        return "node is unschedulable"
    for key, value in pod.node_selector.items():
        if node.labels.get(key) != value:
            return f"node selector {key}={value} does not match"
    terms = pod.required_node_affinity
    if terms and not any(term.matches(node) for term in terms):
        return "required node affinity does not match"
    for taint in node.taints:
        if taint.effect is TaintEffect.PREFER_NO_SCHEDULE:
            continue
        if not any(t.tolerates(taint) for t in pod.tolerations):
            return f"untolerated taint {taint.key}:{taint.effect.value}"
    for resource, amount in pod.requests.items():
        if resource == TELEMETRY_RESOURCE or amount <= 0:
            continue
        free = node.allocatable.get(resource, 0.0) - used.get(resource, 0.0)
        if amount > free:
            return f"insufficient {resource}"
    return None


def least_allocated(pod: Pod, node: Node, used: Mapping[str, float]) -> float:
    """kube-scheduler's LeastAllocated score (0..100) over CPU and memory."""
    scores = []
    for resource in ("cpu", "memory"):
        capacity = node.allocatable.get(resource, 0.0)
        if capacity <= 0:
            continue
        requested = used.get(resource, 0.0) + pod.requests.get(resource, 0.0)
        scores.append(max(0.0, (capacity - requested) / capacity) * 100)
    return sum(scores) / len(scores) if scores else 0.0


def _pod_body(pod: Pod) -> dict[str, object]:
    return {
        "metadata": {
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
            "labels": dict(pod.labels),
        }
    }


class EmbeddedScheduler:
    def __init__(
        self,
        cluster: InMemoryCluster,
        *,
        extender: ExtenderConfig | None,
        client: httpx.Client | None = None,
    ) -> None:
        self._cluster = cluster
        self._extender = extender
        self._client = client or httpx.Client()

    def schedule_pending(self) -> list[Placement]:
        """One pass over pending pods; each is bound or stays pending with a reason."""
        placements = []
        for pod in self._cluster.list_pods():
            if pod.node_name is None and pod.phase == "Pending" and pod.deletion_timestamp is None:
                placements.append(self.schedule(pod))
        return placements

    def schedule(self, pod: Pod) -> Placement:
        nodes = {n.name: n for n in self._cluster.list_nodes()}
        used = self._requested_per_node()
        reasons: dict[str, str] = {}
        feasible: list[NodeName] = []
        for name, node in nodes.items():
            why = fits(pod, node, used.get(name, {}))
            if why is None:
                feasible.append(name)
            else:
                reasons[name] = why
        extender_scores: dict[NodeName, int] = {}
        if feasible and self._extender is not None and POLICY_LABEL in pod.labels:
            try:
                feasible, failed = self._extender_filter(pod, feasible)
                reasons.update(failed)
                if feasible:
                    extender_scores = self._extender_prioritize(pod, feasible)
            except (httpx.HTTPError, ValueError) as error:
                if not self._extender.ignorable:
                    return self._pending(pod, f"extender failed: {error}")
                log.warning("Extender call failed, ignored (ignorable): %s", error)
        if not feasible:
            detail = "; ".join(f"{n}: {r}" for n, r in sorted(reasons.items()))
            return self._pending(pod, f"0/{len(nodes)} nodes are available: {detail}")
        weight = self._extender.weight if self._extender else 0

        def total(name: NodeName) -> tuple[float, str]:
            node_score = least_allocated(pod, nodes[name], used.get(name, {}))
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

    def _requested_per_node(self) -> dict[NodeName, dict[str, float]]:
        used: dict[NodeName, dict[str, float]] = {}
        for pod in self._cluster.list_pods():
            if pod.node_name is None or pod.phase in ("Succeeded", "Failed"):
                continue
            per_node = used.setdefault(pod.node_name, {})
            for resource, amount in pod.requests.items():
                per_node[resource] = per_node.get(resource, 0.0) + amount
        return used

    def _post(self, verb: str, body: Mapping[str, object]) -> object:
        assert self._extender is not None
        response = self._client.post(
            f"{self._extender.url}/scheduler/{verb}", json=body, timeout=self._extender.timeout
        )
        response.raise_for_status()
        return response.json()

    def _extender_filter(
        self, pod: Pod, candidates: Sequence[NodeName]
    ) -> tuple[list[NodeName], dict[str, str]]:
        answer = self._post("filter", {"Pod": _pod_body(pod), "NodeNames": list(candidates)})
        if not isinstance(answer, dict):
            raise ValueError("filter answer is not an object")
        if answer.get("Error"):
            raise ValueError(f"extender error: {answer['Error']}")
        kept = set(_strings(answer.get("NodeNames") or ()))
        failed = {
            **_reasons(answer.get("FailedNodes")),
            **_reasons(answer.get("FailedAndUnresolvableNodes")),
        }
        # Never trust a node the extender was not asked about.
        return [n for n in candidates if n in kept], failed

    def _extender_prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> dict[NodeName, int]:
        answer = self._post("prioritize", {"Pod": _pod_body(pod), "NodeNames": list(candidates)})
        if not isinstance(answer, list):
            raise ValueError("prioritize answer is not a list")
        wanted = set(candidates)
        scores: dict[NodeName, int] = {}
        for entry in answer:
            if isinstance(entry, dict) and entry.get("Host") in wanted:
                scores[NodeName(str(entry["Host"]))] = int(entry.get("Score", 0))
        return scores


def _strings(items: Iterable[object]) -> list[str]:
    return [str(item) for item in items]


def _reasons(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
