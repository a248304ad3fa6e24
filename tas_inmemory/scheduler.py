"""The kube-scheduler model: places pending pods the way kube-scheduler does for the parts that
matter here, and asks the extender through `Extender` (HTTP in `make run`, `extender_client`;
in-process in the simulator).

What it does, in kube-scheduler's order:

1. the queue: pending pods by priority (highest first), then creation time (PrioritySort);
2. its own filters (`tas.fit`, shared with the descheduler's nodeFit: Ready, schedulable, node
   selector, required node affinity, NoSchedule/NoExecute taints, resource fit with
   `telemetry/scheduling` ignored, pod count), searching from where the last search stopped
   and stopping once `percentageOfNodesToScore` of the nodes were found feasible (adaptive by
   default: 50% minus 1% per 125 nodes, at least 5% and at least 100 nodes);
3. the extender's filter, then scores: NodeResourcesFit least-allocated (weight 1) and
   NodeResourcesBalancedAllocation (weight 1) on requests, TaintToleration's PreferNoSchedule
   score (weight 3), plus the extender's priority x weight x 10 (MaxNodeScore 100 over
   MaxExtenderPriority 10);
4. the best total wins; ties are broken at random (reservoir sampling) when given a random
   generator, by node name otherwise (reproducible tests).

The extender's filter and prioritize are separate calls, as in kube-scheduler: a filter that
fails is skipped when the extender is `ignorable` (otherwise the pod stays pending), and its
prioritize is still asked; a prioritize that fails only leaves the extender's scores out. When
one node is left, it is taken without scoring (and the extender is not asked to prioritize).
Only pods that link a policy are sent to the extender (`managedResources` on real clusters).
The extender's answers are never trusted beyond the nodes it was asked about.

Not modelled: the default PodTopologySpread, InterPodAffinity and ImageLocality scores (equal
for every node of the workloads modelled here, apart from topology spreading), preemption and
the scheduling queue's backoff (a pending pod is tried again on every pass).

Sources (kubernetes/kubernetes, pkg/scheduler): default plugin weights in
`apis/config/v1/default_plugins.go`; `framework/plugins/noderesources/least_allocated.go`
(`(capacity - requested) * 100 / capacity`, non-zero defaults of 100m CPU and 200 MiB memory for
pods that request nothing, `resource_allocation.go`); `balanced_allocation.go` (`(1 - std) *
100` of the requested fractions, best-effort pods skipped); `tainttoleration/taint_toleration.go`
(intolerable PreferNoSchedule taints, reverse-normalized); `schedule_one.go`
(`numFeasibleNodesToFind`, `nextStartNodeIndex`, `findNodesThatPassExtenders`: an ignorable
extender's failed filter is skipped; `schedulePod`: one feasible node is not scored;
`prioritizeNodes`: a failed extender prioritize is ignored, its scores x weight x 10;
`selectHost`).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from tas.cluster.interface import ClusterError
from tas.cluster.model import Node, Pod, TaintEffect
from tas.fit import (
    PODS_RESOURCE,
    holds_resources,
    matches_node_selection,
    node_load,
    rejection,
    requested,
    untolerated_taint,
)
from tas.types import NodeName
from tas.vocabulary import POLICY_LABEL, TELEMETRY_RESOURCE
from tas_inmemory.cluster import InMemoryCluster

log = logging.getLogger(__name__)

MAX_NODE_SCORE = 100
MAX_EXTENDER_PRIORITY = 10
#: kube-scheduler's default score plugin weights (those modelled here).
WEIGHT_FIT = 1
WEIGHT_BALANCED = 1
WEIGHT_TAINTS = 3
#: What kube-scheduler scores a pod that requests nothing as requesting (schedutil non-zero).
NON_ZERO_CPU_MILLI = 100
NON_ZERO_MEMORY = 200 * 1024 * 1024
MIN_FEASIBLE_NODES = 100
MIN_FEASIBLE_PERCENTAGE = 5
BASE_PERCENTAGE = 50

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


class ExtenderError(Exception):
    """The extender could not be asked, or answered something unusable."""


@dataclass(frozen=True)
class FilterAnswer:
    passed: Sequence[NodeName]
    #: Why each removed node was removed, as the extender said.
    failed: Mapping[str, str] = field(default_factory=dict)


class Extender(Protocol):
    """A scheduler extender as kube-scheduler sees it; raises `ExtenderError` on failure."""

    # Read-only: the scheduler never changes an extender's configuration.
    @property
    def weight(self) -> int: ...

    @property
    def ignorable(self) -> bool: ...

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer: ...

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]: ...


@dataclass(frozen=True)
class ScheduleResult:
    """One scheduling attempt's outcome for a pod ("namespace/name"): the node it was bound to
    ("scheduled"), or None and why it waits (kube-scheduler's ScheduleResult and FitError).
    Not herd control's `tas_herd.placements.Placement` (a bound pod whose load samples miss)."""

    pod: str
    node: NodeName | None
    reason: str


def num_feasible_nodes_to_find(nodes: int, percentage: int = 0) -> int:
    """How many feasible nodes kube-scheduler looks for before it stops searching."""
    if nodes < MIN_FEASIBLE_NODES or percentage >= 100:
        return nodes
    adaptive = percentage
    if adaptive <= 0:
        adaptive = max(MIN_FEASIBLE_PERCENTAGE, BASE_PERCENTAGE - nodes // 125)
    return max(MIN_FEASIBLE_NODES, nodes * adaptive // 100)


def _milli(cores: float) -> int:
    return round(cores * 1000)


def _epoch(pod: Pod) -> float:
    stamp: datetime | None = pod.creation_timestamp
    return stamp.timestamp() if stamp is not None else 0.0


def _placement_rules(pod: Pod) -> Hashable:
    """What decides which nodes a pod may go to, whatever they hold."""
    return (tuple(sorted(pod.node_selector.items())), pod.required_node_affinity, pod.tolerations)


def _shape(pod: Pod) -> Hashable:
    """What decides whether a node would take the pod: pods of one shape get one answer."""
    return (_placement_rules(pod), tuple(sorted(pod.requests.items())), pod.node_name)


class _NodeTable:
    """One pass's view of the nodes: what is requested of each, kept current as pods bind."""

    def __init__(self, nodes: Sequence[Node], pods: Sequence[Pod]) -> None:
        self.nodes = list(nodes)
        self.names = [n.name for n in self.nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        count = len(self.nodes)

        def allocatable(resource: str) -> FloatArray:
            return np.array(
                [n.allocatable.get(resource, np.nan) for n in self.nodes], dtype=np.float64
            )

        self.alloc_cpu = allocatable("cpu")
        self.alloc_memory = allocatable("memory")
        self.alloc_pods = allocatable(PODS_RESOURCE)
        self.alloc_cpu_milli = np.array(
            [_milli(n.allocatable.get("cpu", 0.0)) for n in self.nodes], dtype=np.int64
        )
        self.alloc_memory_int = np.array(
            [round(n.allocatable.get("memory", 0.0)) for n in self.nodes], dtype=np.int64
        )
        self.pods_on: list[list[Pod]] = [[] for _ in self.nodes]
        self._static: dict[Hashable, tuple[BoolArray, IntArray]] = {}
        # Per pod shape (`_shape`), until the next bind changes what the nodes hold: a pod that
        # fits nowhere is retried every pass with its replicas, and asking again for each one
        # why it fits nowhere was most of a large simulation's time.
        self._feasible: dict[Hashable, BoolArray] = {}
        self._rejections: dict[Hashable, list[str | None]] = {}
        # The pods bound already, summed in plain Python numbers (as `add` sums them, one
        # pod after another, so to the same values): a pass starts from hundreds of them.
        cpu, memory = [0.0] * count, [0.0] * count
        cpu_milli, memory_int = [0] * count, [0] * count
        nonzero_cpu, nonzero_memory, bound = [0] * count, [0] * count, [0] * count
        index = self.index
        for pod in pods:
            i = index.get(pod.node_name) if pod.node_name is not None else None
            if i is None or not holds_resources(pod):
                continue
            requests = pod.requests
            pod_cpu = requests.get("cpu", 0.0)
            pod_memory = requests.get("memory", 0.0)
            milli, rounded = _milli(pod_cpu), round(pod_memory)
            cpu[i] += pod_cpu
            memory[i] += pod_memory
            cpu_milli[i] += milli
            memory_int[i] += rounded
            nonzero_cpu[i] += milli or NON_ZERO_CPU_MILLI
            nonzero_memory[i] += rounded or NON_ZERO_MEMORY
            bound[i] += 1
            self.pods_on[i].append(pod)
        self.cpu = np.array(cpu, dtype=np.float64)
        self.memory = np.array(memory, dtype=np.float64)
        self.cpu_milli = np.array(cpu_milli, dtype=np.int64)
        self.memory_int = np.array(memory_int, dtype=np.int64)
        self.nonzero_cpu = np.array(nonzero_cpu, dtype=np.int64)
        self.nonzero_memory = np.array(nonzero_memory, dtype=np.int64)
        self.pods = np.array(bound, dtype=np.int64)

    def add(self, pod: Pod, i: int) -> None:
        cpu = pod.requests.get("cpu", 0.0)
        memory = pod.requests.get("memory", 0.0)
        self.cpu[i] += cpu
        self.memory[i] += memory
        self.cpu_milli[i] += _milli(cpu)
        self.memory_int[i] += round(memory)
        self.nonzero_cpu[i] += _milli(cpu) or NON_ZERO_CPU_MILLI
        self.nonzero_memory[i] += round(memory) or NON_ZERO_MEMORY
        self.pods[i] += 1
        self.pods_on[i].append(pod)
        self._feasible.clear()
        self._rejections.clear()

    def rejections(self, pod: Pod) -> list[str | None]:
        """`tas.fit.rejection` of the pod by each node."""
        key = _shape(pod)
        found = self._rejections.get(key)
        if found is None:
            found = self._rejections[key] = [
                rejection(pod, node, pods_on_node=on, load=node_load(on))
                for node, on in zip(self.nodes, self.pods_on, strict=True)
            ]
        return found

    def _static_part(self, pod: Pod) -> tuple[BoolArray, IntArray]:
        """Filters that depend on the pod's placement rules only (cached per pass), and the
        number of PreferNoSchedule taints each node has that the pod does not tolerate."""
        key = _placement_rules(pod)
        found = self._static.get(key)
        if found is None:
            ok = np.array(
                [
                    n.ready
                    and not n.unschedulable
                    and matches_node_selection(pod, n)
                    and untolerated_taint(pod, n.taints) is None
                    for n in self.nodes
                ],
                dtype=np.bool_,
            )
            soft = np.array(
                [
                    sum(
                        1
                        for t in n.taints
                        if t.effect is TaintEffect.PREFER_NO_SCHEDULE
                        and not any(
                            tol.tolerates(t)
                            for tol in pod.tolerations
                            if not tol.effect or tol.effect == TaintEffect.PREFER_NO_SCHEDULE
                        )
                    )
                    for n in self.nodes
                ],
                dtype=np.int64,
            )
            found = self._static[key] = (ok, soft)
        return found

    def feasible(self, pod: Pod) -> BoolArray:
        """Nodes that pass kube-scheduler's filters for the pod (the same verdict as
        `tas.fit.rejection`, computed for every node at once). Read only: it is shared."""
        key = _shape(pod)
        found = self._feasible.get(key)
        if found is None:
            found = self._feasible[key] = self._feasible_now(pod)
        return found

    def _feasible_now(self, pod: Pod) -> BoolArray:
        ok = self._static_part(pod)[0].copy()
        for resource, wanted in pod.requests.items():
            if resource == TELEMETRY_RESOURCE or wanted <= 0:
                continue
            if resource == "cpu":
                with np.errstate(invalid="ignore"):
                    ok &= self.cpu + wanted <= self.alloc_cpu
            elif resource == "memory":
                with np.errstate(invalid="ignore"):
                    ok &= self.memory + wanted <= self.alloc_memory
            else:
                for i in np.flatnonzero(ok):
                    available = self.nodes[i].allocatable.get(resource)
                    if available is None or requested(self.pods_on[i], resource) + wanted > (
                        available
                    ):
                        ok[i] = False
        ok &= np.isnan(self.alloc_pods) | (self.pods + 1 <= self.alloc_pods)
        return ok

    def least_allocated(self, pod: Pod, chosen: IntArray) -> IntArray:
        cpu = _milli(pod.requests.get("cpu", 0.0)) or NON_ZERO_CPU_MILLI
        memory = round(pod.requests.get("memory", 0.0)) or NON_ZERO_MEMORY
        scores = np.zeros(len(chosen), dtype=np.int64)
        for alloc, used, want in (
            (self.alloc_cpu_milli[chosen], self.nonzero_cpu[chosen], cpu),
            (self.alloc_memory_int[chosen], self.nonzero_memory[chosen], memory),
        ):
            total = used + want
            fits = (alloc > 0) & (total <= alloc)
            safe = np.where(alloc > 0, alloc, 1)
            scores += np.where(fits, (alloc - total) * MAX_NODE_SCORE // safe, 0)
        return scores // 2

    def balanced_allocation(self, pod: Pod, chosen: IntArray) -> IntArray:
        cpu = _milli(pod.requests.get("cpu", 0.0))
        memory = round(pod.requests.get("memory", 0.0))
        if cpu == 0 and memory == 0:
            return np.zeros(len(chosen), dtype=np.int64)  # best-effort pods are not scored
        alloc_cpu = self.alloc_cpu_milli[chosen]
        alloc_memory = self.alloc_memory_int[chosen]
        # A node without the resource is not scored on it: its fraction, whatever the
        # division gave, is left out by `both`.
        with np.errstate(divide="ignore", invalid="ignore"):
            cpu_f = np.minimum((self.cpu_milli[chosen] + cpu) / alloc_cpu, 1.0)
            mem_f = np.minimum((self.memory_int[chosen] + memory) / alloc_memory, 1.0)
        both = (alloc_cpu > 0) & (alloc_memory > 0)
        std = np.where(both, np.abs(cpu_f - mem_f) / 2, 0.0)
        return np.trunc((1.0 - std) * MAX_NODE_SCORE).astype(np.int64)

    def taint_toleration(self, pod: Pod, chosen: IntArray) -> IntArray:
        counts = self._static_part(pod)[1][chosen]
        highest = int(counts.max()) if len(counts) else 0
        if highest == 0:
            return np.full(len(chosen), MAX_NODE_SCORE, dtype=np.int64)
        return MAX_NODE_SCORE - MAX_NODE_SCORE * counts // highest


class InMemoryScheduler:
    """The kube-scheduler model over the in-memory cluster (this module's docstring)."""

    def __init__(
        self,
        cluster: InMemoryCluster,
        *,
        extender: Extender | None,
        rng: random.Random | None = None,
        percentage_of_nodes_to_score: int = 0,
    ) -> None:
        self._cluster = cluster
        self._extender = extender
        self._rng = rng
        self._percentage = percentage_of_nodes_to_score
        self._next_start = 0
        # The last pass, when no pending pod passed the scheduler's own filters: (the
        # cluster's version then, its results). Until the cluster changes, a pass is that one
        # again: nothing was searched, no extender was asked, nothing depends on the time.
        # A pod that fits nowhere waits through many passes, and rebuilding the node table
        # for each was most of what a quiet simulation step cost.
        self._fits_nowhere: tuple[int, list[ScheduleResult]] | None = None
        self._searched = False

    def schedule_pending(self) -> list[ScheduleResult]:
        """One pass over pending pods, in queue order; each is bound or stays pending."""
        version = self._cluster.version
        if self._fits_nowhere is not None and self._fits_nowhere[0] == version:
            results = self._fits_nowhere[1]
            for result in results:
                log.info("Pod %s stays pending: %s", result.pod, result.reason)
            return list(results)
        self._fits_nowhere = None
        pods = self._cluster.list_pods()
        pending = [
            p
            for p in pods
            if p.node_name is None and p.phase == "Pending" and p.deletion_timestamp is None
        ]
        if not pending:
            return []
        pending.sort(key=lambda p: (-p.priority, _epoch(p)))
        table = _NodeTable(self._cluster.list_nodes(), pods)
        self._searched = False
        results = [self._place(pod, table) for pod in pending]
        if not self._searched and self._cluster.version == version:
            self._fits_nowhere = (version, results)
        return results

    def schedule(self, pod: Pod) -> ScheduleResult:
        table = _NodeTable(self._cluster.list_nodes(), self._cluster.list_pods())
        return self._place(pod, table)

    def _candidates(self, pod: Pod, table: _NodeTable) -> IntArray:
        """Feasible nodes, searched round-robin from where the last search stopped."""
        feasible = table.feasible(pod)
        if not feasible.any():
            return np.empty(0, dtype=np.int64)  # every node searched: the next search starts here
        count = len(table.nodes)
        wanted = num_feasible_nodes_to_find(count, self._percentage)
        # The nodes from where the last search stopped, round the list (np.roll's order).
        order = (np.arange(count, dtype=np.int64) + self._next_start) % max(count, 1)
        found = np.flatnonzero(feasible[order])
        if len(found) >= wanted:
            found = found[:wanted]
            processed = int(found[-1]) + 1
        else:
            processed = count
        if count:
            self._next_start = (self._next_start + processed) % count
        return order[found]

    def _place(self, pod: Pod, table: _NodeTable) -> ScheduleResult:
        chosen = self._candidates(pod, table)
        self._searched = self._searched or len(chosen) > 0
        names = [table.names[i] for i in chosen]
        reasons: dict[str, str] = {}
        extender_scores: Mapping[NodeName, int] = {}
        extender = self._extender if POLICY_LABEL in pod.labels else None
        if names and extender is not None:
            # findNodesThatPassExtenders: a failed filter of an ignorable extender skips that
            # extender's filter only; otherwise the pod fails to schedule.
            try:
                answer = extender.filter(pod, names)
            except ExtenderError as error:
                if not extender.ignorable:
                    return self._pending(pod, f"extender failed: {error}")
                log.warning("Extender filter failed, skipped (ignorable): %s", error)
            else:
                asked = set(names)
                kept = set(answer.passed)
                names = [n for n in names if n in kept]
                reasons.update({n: r for n, r in answer.failed.items() if n in asked})
        # schedulePod: one feasible node is taken without scoring. prioritizeNodes: a failed
        # prioritize only leaves that extender's scores out, ignorable or not.
        if len(names) > 1 and extender is not None:
            try:
                scores = extender.prioritize(pod, names)
            except ExtenderError as error:
                log.debug("Extender prioritize failed, no scores from it: %s", error)
            else:
                allowed = set(names)
                extender_scores = {n: s for n, s in scores.items() if n in allowed}
        if not names:
            for node, why in zip(table.nodes, table.rejections(pod), strict=True):
                if why is not None and node.name not in reasons:
                    reasons[node.name] = why
            detail = "; ".join(f"{n}: {r}" for n, r in sorted(reasons.items()))
            return self._pending(pod, f"0/{len(table.nodes)} nodes are available: {detail}")
        best = self._select(pod, table, names, extender_scores)
        try:
            bound = self._cluster.bind_pod(pod.namespace, pod.name, best)
        except ClusterError as error:
            return self._pending(pod, f"binding failed: {error}")
        table.add(bound, table.index[best])
        log.info("Scheduled %s/%s on %s", pod.namespace, pod.name, best)
        return ScheduleResult(f"{pod.namespace}/{pod.name}", best, "scheduled")

    def _select(
        self,
        pod: Pod,
        table: _NodeTable,
        names: Sequence[NodeName],
        extender_scores: Mapping[NodeName, int],
    ) -> NodeName:
        chosen = np.array([table.index[n] for n in names], dtype=np.int64)
        total = (
            WEIGHT_FIT * table.least_allocated(pod, chosen)
            + WEIGHT_BALANCED * table.balanced_allocation(pod, chosen)
            + WEIGHT_TAINTS * table.taint_toleration(pod, chosen)
        )
        weight = self._extender.weight if self._extender is not None else 0
        if extender_scores and weight:
            factor = weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
            total = total + factor * np.array(
                [extender_scores.get(name, 0) for name in names], dtype=np.int64
            )
        best = int(total.max())
        ties = [int(i) for i in np.flatnonzero(total == best)]
        if self._rng is None:
            return max(names[i] for i in ties)
        if len(ties) == 1:
            return names[ties[0]]
        # kube-scheduler's selectHost samples the tied nodes uniformly (reservoir sampling);
        # one draw among them is the same distribution.
        return names[ties[self._rng.randrange(len(ties))]]

    def _pending(self, pod: Pod, reason: str) -> ScheduleResult:
        log.info("Pod %s/%s stays pending: %s", pod.namespace, pod.name, reason)
        return ScheduleResult(f"{pod.namespace}/{pod.name}", None, reason)
