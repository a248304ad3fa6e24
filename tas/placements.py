"""Recent placements: the load of pods bound since a node's newest sample (herd control).

Metrics lag placements: a node that looks cold keeps looking cold until a sample whose
averaging window starts after the pod began to run. Until then every pod of a burst would go
there. So, per node, the pods bound since its samples were taken each carry an estimated load
(the mean observed usage of their workload's other pods where known, else their requests scaled
by how much the pods with known usage use beyond their requests: the fleet's usage/requests
ratio, never below 1, since a burst of a new workload is as under-requested as the rest), and
the extender adds it, as a share of the node's capacity, to the node's value of every metric
mapped to a resource (`DEFAULT_RESOURCES`) until the node's sample covers the pod:

    sample time > bind time + window

`window` is the metrics' averaging window plus whatever else keeps a new pod out of a sample
(its start-up, the scrape delay). A sample taken part-way through holds part of the pod's load
already, so the estimate shrinks linearly from the whole load (a sample from before the bind)
to nothing (a sample that covers the pod). Pure: `PlacementTracker` holds what it was told (binds,
usage) and answers from values it is given (sample times, now); the feeds (the pod watch in
`tas extender`, the embedded cluster in the simulator) and the clock live in the wiring.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from tas.clock import Clock
from tas.cluster.interface import ChangeType, ClusterChange, ResourceKind
from tas.cluster.model import Pod
from tas.types import MetricColumns, MetricName, NodeName

#: Metric -> the pod resource whose share of the node's capacity estimates its rise. CPU
#: pressure is no linear function of load; the pod's CPU share is a first-order stand-in that
#: is enough to make a node that just received pods look as busy as it is about to be.
DEFAULT_RESOURCES: Mapping[MetricName, str] = {
    MetricName("cpu_utilization"): "cpu",
    MetricName("cpu_pressure"): "cpu",
    MetricName("memory_utilization"): "memory",
}
DEFAULT_WINDOW = 90.0
#: Placements are forgotten this long after their window even without a covering sample (a
#: node whose metrics stopped is stale anyway, and stale values are never estimated upon).
FORGET_AFTER = 600.0

PodKey = tuple[str, str]
#: namespace, owner kind, owner name (the pod's own name for a pod without a controller).
WorkloadKey = tuple[str, str, str]
#: metric -> node -> sample time (Unix seconds) of the node's current value.
SampleTimes = Mapping[MetricName, Mapping[NodeName, float]]
#: metric -> node -> value to add.
Estimates = Mapping[MetricName, Mapping[NodeName, float]]


@dataclass(frozen=True, slots=True)
class Placement:
    namespace: str
    name: str
    node: NodeName
    bound_at: float
    workload: WorkloadKey
    requests: Mapping[str, float]


def workload_of(pod: Pod) -> WorkloadKey:
    owner = pod.controller
    if owner is None:
        return (pod.namespace, "Pod", pod.name)
    return (pod.namespace, owner.kind, owner.name)


def bind_time(pod: Pod) -> float | None:
    """When the pod was bound: its PodScheduled condition's transition, else its start time."""
    for condition in pod.conditions:
        if (
            condition.type == "PodScheduled"
            and condition.status == "True"
            and condition.last_transition_time is not None
        ):
            return condition.last_transition_time.timestamp()
    if pod.start_time is not None:
        return pod.start_time.timestamp()
    return None


def is_covered(placement: Placement, sample_time: float, window: float) -> bool:
    return sample_time > placement.bound_at + window


def uncovered_share(placement: Placement, sample_time: float, window: float) -> float:
    """How much of the pod's load the node's sample misses: all of it for a sample taken
    before the bind, none once it covers the pod, and in between the part of the window the
    pod had not run yet (an average over the window already holds the rest)."""
    if window <= 0:
        return 0.0 if sample_time > placement.bound_at else 1.0
    missed = (placement.bound_at + window - sample_time) / window
    return min(1.0, max(0.0, missed))


def estimate_load(
    placements: Iterable[Placement],
    *,
    sample_times: SampleTimes,
    window: float,
    resources: Mapping[MetricName, str],
    capacity: Mapping[NodeName, Mapping[str, float]],
    default_capacity: Mapping[str, float],
    usage: Mapping[WorkloadKey, Mapping[str, float]],
    request_scale: Mapping[str, float] | None = None,
) -> dict[MetricName, dict[NodeName, float]]:
    """Per metric and node, the share of capacity that placements not yet covered add.

    A node's value is only estimated upon when it has one (sample_times names it): a node
    without a value stays without one (absent values never violate, and never score).
    """
    found: dict[MetricName, dict[NodeName, float]] = {}
    scale = request_scale or {}
    for placement in placements:
        load = usage.get(placement.workload)
        if not load:
            load = {r: v * scale.get(r, 1.0) for r, v in placement.requests.items()}
        cap = capacity.get(placement.node) or default_capacity
        for metric, resource in resources.items():
            times = sample_times.get(metric)
            if times is None:
                continue
            sampled = times.get(placement.node)
            if sampled is None or is_covered(placement, sampled, window):
                continue
            amount = load.get(resource, 0.0) * uncovered_share(placement, sampled, window)
            size = cap.get(resource) or default_capacity.get(resource, 0.0)
            if amount <= 0 or size <= 0:
                continue
            column = found.setdefault(metric, {})
            column[placement.node] = column.get(placement.node, 0.0) + amount / size
    return found


def add_estimates(columns: MetricColumns, estimates: Estimates) -> MetricColumns:
    """`columns` with each estimate added to the node's measured value (new mappings)."""
    if not estimates:
        return columns
    merged = dict(columns)
    for metric, extra in estimates.items():
        measured = columns.get(metric)
        if not measured or not extra:
            continue
        column: dict[NodeName, float] = dict(measured)
        for node, value in extra.items():
            if node in column:
                column[node] += value
        merged[metric] = column
    return merged


def only_metrics(estimates: Estimates, metrics: Iterable[MetricName]) -> Estimates:
    return {m: estimates[m] for m in metrics if estimates.get(m)}


class PlacementTracker:
    """The recent placements, told by a feed (`observe`, `forget`, `set_usage`).

    Thread-safe: the feed calls from a watch thread while requests read. Reads cost one pass
    over the placements still uncovered (a few per node that just received pods).
    """

    def __init__(
        self,
        *,
        window: float = DEFAULT_WINDOW,
        resources: Mapping[MetricName, str] = DEFAULT_RESOURCES,
        default_capacity: Mapping[str, float] | None = None,
        forget_after: float = FORGET_AFTER,
    ) -> None:
        if not window >= 0 or not math.isfinite(window):
            raise ValueError(f"window must be a non-negative number of seconds, not {window!r}")
        self.window = window
        self.resources = dict(resources)
        self.default_capacity = dict(default_capacity or {})
        self.forget_after = forget_after
        self._lock = threading.Lock()
        self._recent: dict[PodKey, Placement] = {}
        self._bound: dict[PodKey, WorkloadKey] = {}
        self._requests: dict[PodKey, Mapping[str, float]] = {}
        self._scale: dict[str, float] = {}
        self._capacity: dict[NodeName, Mapping[str, float]] = {}
        self._usage: dict[WorkloadKey, Mapping[str, float]] = {}
        #: Bumped by every change the estimates depend on other than a new placement; with the
        #: identity of the sample times (the view hands out the same mapping until it
        #: refreshes) it keys the cache.
        self._generation = 0
        self._cached: tuple[int, SampleTimes | None, Estimates] = (-1, None, {})
        #: Placements observed since the cache was built: added to it, not recomputed, so a
        #: burst of N binds costs N small updates rather than N passes over every placement.
        self._fresh: list[Placement] = []

    # -- the feed --------------------------------------------------------------------------

    def observe(self, pod: Pod, *, now: float) -> None:
        """A pod as the cluster now has it: bound pods are remembered once, with their bind
        time (or `now` when the pod carries none); finished or deleted pods are forgotten."""
        key = (pod.namespace, pod.name)
        if pod.node_name is None:
            return
        if pod.phase in ("Succeeded", "Failed") or pod.deletion_timestamp is not None:
            self.forget(pod.namespace, pod.name)
            return
        with self._lock:
            if key in self._bound:
                return
            workload = workload_of(pod)
            self._bound[key] = workload
            self._requests[key] = pod.requests
            bound_at = bind_time(pod)
            bound_at = now if bound_at is None else min(bound_at, now)
            if now - bound_at <= self.window + self.forget_after:
                placement = Placement(
                    pod.namespace, pod.name, pod.node_name, bound_at, workload, pod.requests
                )
                self._recent[key] = placement
                self._fresh.append(placement)

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            self._bound.pop((namespace, name), None)
            self._requests.pop((namespace, name), None)
            if self._recent.pop((namespace, name), None) is not None:
                self._generation += 1

    def set_capacity(self, capacity: Mapping[NodeName, Mapping[str, float]]) -> None:
        with self._lock:
            if capacity != self._capacity:
                self._capacity = dict(capacity)
                self._generation += 1

    def set_usage(self, usage: Mapping[PodKey, Mapping[str, float]]) -> None:
        """Observed per-pod usage (cores, bytes), of pods measured over a whole window: each
        workload's mean becomes the estimate of its new pods."""
        with self._lock:
            sums: dict[WorkloadKey, dict[str, float]] = {}
            counts: dict[WorkloadKey, int] = {}
            used: dict[str, float] = {}
            requested: dict[str, float] = {}
            for key, values in usage.items():
                workload = self._bound.get(key)
                if workload is None:
                    continue
                requests = self._requests.get(key, {})
                total = sums.setdefault(workload, {})
                for resource, value in values.items():
                    total[resource] = total.get(resource, 0.0) + value
                    if requests.get(resource, 0.0) > 0:
                        used[resource] = used.get(resource, 0.0) + value
                        requested[resource] = requested.get(resource, 0.0) + requests[resource]
                counts[workload] = counts.get(workload, 0) + 1
            usage_of: dict[WorkloadKey, Mapping[str, float]] = {
                w: {r: v / counts[w] for r, v in total.items()} for w, total in sums.items()
            }
            scale = {r: max(1.0, used[r] / requested[r]) for r in requested}
            if usage_of != self._usage or scale != self._scale:
                self._usage, self._scale = usage_of, scale
                self._generation += 1

    # -- the reads -------------------------------------------------------------------------

    def placements(self) -> list[Placement]:
        with self._lock:
            return list(self._recent.values())

    def estimates(self, *, sample_times: SampleTimes, now: float) -> Estimates:
        """Per metric and node, what to add (cached until the placements, the usage or the
        sample times change: requests between two metric refreshes cost a lookup)."""
        with self._lock:
            self._prune(now)
            if not self._recent:
                self._fresh = []
                return {}
            generation, times, cached = self._cached
            incremental = generation == self._generation and times is sample_times
            if incremental and not self._fresh:
                return cached
            placements = self._fresh if incremental else list(self._recent.values())
            self._fresh = []
            generation = self._generation
            usage = self._usage
            capacity = self._capacity
            scale = self._scale
        computed = estimate_load(
            placements,
            sample_times=sample_times,
            window=self.window,
            resources=self.resources,
            capacity=capacity,
            default_capacity=self.default_capacity,
            usage=usage,
            request_scale=scale,
        )
        found: Estimates = _added(cached, computed) if incremental else computed
        with self._lock:
            self._cached = (generation, sample_times, found)
        return found

    def _prune(self, now: float) -> None:
        horizon = self.window + self.forget_after
        old = [k for k, p in self._recent.items() if now - p.bound_at > horizon]
        for key in old:
            del self._recent[key]
        if old:
            self._generation += 1


def _added(base: Estimates, more: Estimates) -> Estimates:
    """`base` with `more` added, per metric and node (a new mapping: `base` may be in use)."""
    merged = {metric: dict(column) for metric, column in base.items()}
    for metric, column in more.items():
        target = merged.setdefault(metric, {})
        for node, value in column.items():
            target[node] = target.get(node, 0.0) + value
    return merged


def follow_pods(
    tracker: PlacementTracker,
    find_pod: Callable[[str, str], Pod | None],
    clock: Clock,
) -> Callable[[ClusterChange], None]:
    """A cluster change listener (`ObservableCluster.subscribe`) that feeds `tracker`."""

    def listen(change: ClusterChange) -> None:
        if change.kind is not ResourceKind.POD:
            return
        if change.type is ChangeType.DELETED:
            tracker.forget(change.namespace, change.name)
            return
        pod = find_pod(change.namespace, change.name)
        if pod is not None:
            tracker.observe(pod, now=clock.now().timestamp())

    return listen
