"""Recent placements: the load of pods bound since a node's newest sample (herd control).

Metrics lag placements: a node that looks cold keeps looking cold until a sample whose
averaging window starts after the pod began to run. Until then every pod of a burst would go
there. So, per node, the pods bound since its samples were taken each carry an estimated load,
and the extender adds it, as a share of the node's capacity (its Node's allocatable, else a
default), to the node's value of every metric mapped to a resource (`DEFAULT_RESOURCES`) until
the node's sample covers the pod:

    sample time > bind time + window

`window` is the metrics' averaging window plus whatever else keeps a new pod out of a sample
(its start-up, the scrape delay). A sample taken part-way through holds part of the pod's load
already, so the estimate shrinks linearly from the whole load (a sample from before the bind)
to nothing (a sample that covers the pod).

The window follows what the cluster shows (`tas.calibration.delays.follow_window`): the pods'
start-up (`Ready` less bind time, 90th percentile, from the pods the tracker sees start), the
metric lag (a value's age when read against its own sample time, 90th percentile, once per
refresh: a margin for a stamp later than the data it averages, as a recording rule's
evaluation time is), plus the metrics' averaging window, which no cluster shows
(`metric_window`, the `[1m]` of the shipped recording rules). The shipped window stands until
8 start-ups and 3 refreshes have been seen, and the window stays within the operator's limits
(`min_window`, by default the shipped window itself, and `max_window`), which always include
the shipped window.

A pod's estimated load, per resource, is the first of:
- its own measured usage, once a per-pod usage feed reports it;
- what its workload's pods use, one value per pod: their mean by default, or a percentile
  (`usage_percentile`, `tas extender --estimate-percentile`). A mean hides a mix of busy and
  idle replicas behind equal requests (1.7 and 0.05 cores average 1.2), so one busy pod can
  land where only an average one fits; a high percentile assumes every new pod is a busy one,
  which overstates a burst's total and steers later pods to nodes known only by lagging values.
  The mean is the default (docs/decisions.md, "Herd control's estimates"), and the pod's own
  usage replaces it as soon as it is measured;
- its requests, scaled by the fleet's usage/requests ratio (never below 1: a burst of a new
  workload is as under-requested as the rest).

Nodes without a value (the rule, docs/recent-placements.md): a node whose every pod is a recent
placement (it joined, or was emptied, since the placements' horizon) is known to run nothing
else, so while it has no sample of a metric its value is its placements' estimated load alone,
0 when it has none. It fills up, is filtered (where estimates are filtered on) and loses score
like any node, and never violates on missing data alone: only the load placed there counts.
A node without a value that also runs pods the tracker cannot estimate stays without one
(absent values never violate, and never score), and a metric nobody reports gets no value.

Pressure rises along the stall curve, not in proportion to load: an estimate for a metric in
`PRESSURE_METRICS` (CPU PSI) is not added to the measured value. The node's load is read from
its measurements as the descheduler reads it (`tas.pressure.NodeLoad.measured`: its measured
utilization, or the load its pressure implies where that says more; a pressure below
`tas.pressure.MIN_PSI` is noise and implies none), the placements' cores are added to it, and
the pressure at that load is the node's value (`add_estimates` with the nodes' cores). On 8
cores, a node measured at 0.2 that receives one core reads 0.41, not 0.325, while an empty node
that receives the same still reads 0: the same core costs a loaded node more, which is what
keeps a burst off the nodes about to stall, and an idle node's noise (0.012 on 16 cores would
read back as 8 busy cores) costs nothing (measured: docs/decisions.md, "Herd control's
estimates"). The curve is the node's own where the tracker has learned one
(`tas.calibration.curve`: from the view's columns at each refresh, `PlacementTracker.learn`),
the shared model until then.

Pure: `PlacementTracker` holds what it was told (binds, nodes, usage) and answers from values
it is given (sample times, now); the feeds (the pod and node watches in `tas extender`, the
in-memory cluster in the simulator: both `follow_cluster`) and the clock live in the wiring.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from tas.calibration import Calibration
from tas.calibration.curve import CurveLearner, Curves
from tas.calibration.delays import DEFAULT_QUANTILE, DelayRing, follow_window
from tas.clock import Clock
from tas.cluster.interface import ChangeType, ClusterChange, ResourceKind
from tas.cluster.model import Node, Pod, PodSummary, WorkloadKey, workload_of
from tas.pressure import NodeLoad, pressure
from tas.types import MetricColumns, MetricName, NodeName, PodKey

#: Metric -> the pod resource whose share of the node's capacity estimates its rise. CPU
#: pressure is no linear function of load; the pod's CPU share is a first-order stand-in that
#: is enough to make a node that just received pods look as busy as it is about to be.
DEFAULT_RESOURCES: Mapping[MetricName, str] = {
    MetricName("cpu_utilization"): "cpu",
    MetricName("cpu_pressure"): "cpu",
    MetricName("memory_utilization"): "memory",
}
#: Metrics whose estimate follows the stall curve (`tas.pressure`) from the measured value,
#: where the nodes' cores are known (`add_estimates`); the others add their share linearly.
PRESSURE_METRICS: frozenset[MetricName] = frozenset({MetricName("cpu_pressure")})
#: The utilization each of `PRESSURE_METRICS` reads its node's load from, beside the pressure.
PRESSURE_UTILIZATION: Mapping[MetricName, MetricName] = {
    MetricName("cpu_pressure"): MetricName("cpu_utilization")
}
#: What herd control fetches beside the policies' metrics: each pressure metric and the
#: utilization read beside it, the (utilization, PSI) pairs a node's curve is learned from,
#: whose sample times also show the metric lag the window follows. Without them a fleet whose
#: policies name only `cpu_pressure` would never learn a curve.
HERD_CONTROL_METRICS: frozenset[MetricName] = frozenset(PRESSURE_UTILIZATION) | frozenset(
    PRESSURE_UTILIZATION.values()
)
DEFAULT_WINDOW = 90.0
#: The metrics' averaging window, the part of the window no observed delay shows: the `[1m]`
#: of the shipped recording rules (deploy/metrics-pipeline/prometheus/tas-recording-rules.yml).
DEFAULT_METRIC_WINDOW = 60.0
#: The longest window the observed delays may set by default: a start-up slower than 3-4
#: minutes is an operator's to set (`--estimate-window`); beyond it one burst's estimates would
#: outlast several descheduling cycles and steer placements by pods long since measured.
DEFAULT_MAX_WINDOW = 300.0
#: Refreshes whose values' age the window waits for (each is already the 90th percentile over
#: every node's value; the tracker sees a refresh only when a pod is being scheduled, so a
#: quiet cluster sees few), beside `tas.calibration.delays`' 8 start-ups.
MIN_LAG_OBSERVATIONS = 3
#: Placements are forgotten this long after their window even without a covering sample (a
#: node whose metrics stopped is stale anyway: once its pods are no longer recent, it stays
#: without a value).
FORGET_AFTER = 600.0

#: Workload keys kept for sharing before the table starts over.
_MAX_WORKLOADS = 50_000

#: metric -> node -> sample time (Unix seconds) of the node's current value.
SampleTimes = Mapping[MetricName, Mapping[NodeName, float]]
#: metric -> node -> value to add.
Estimates = Mapping[MetricName, Mapping[NodeName, float]]


@dataclass(frozen=True, slots=True)
class Placement:
    """A pod bound recently, whose load its node's samples may not hold yet (what herd
    control estimates). Not the scheduler model's `tas_inmemory.scheduler.ScheduleResult` nor
    `tas explain`'s `tas_explain.explanation.ExtenderDecision`."""

    namespace: str
    name: str
    node: NodeName
    bound_at: float
    workload: WorkloadKey
    requests: Mapping[str, float]


def bind_time(pod: Pod | PodSummary) -> float | None:
    """When the pod was bound: its PodScheduled condition's transition, else its start time."""
    return pod.bound_at


def still_runs(pod: Pod | PodSummary) -> bool:
    """The pod counts on its node: not finished, not being deleted (the tracker forgets the
    others, and `only_placed` is judged on the rest)."""
    return pod.phase not in ("Succeeded", "Failed") and not pod.terminating


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
    pod_usage: Mapping[PodKey, Mapping[str, float]] | None = None,
    only_placed: Collection[NodeName] = (),
) -> dict[MetricName, dict[NodeName, float]]:
    """Per metric and node, the share of capacity that placements not yet covered add.

    `usage` is each workload's per-pod estimate, `pod_usage` each pod's own measured usage
    (preferred). A node with a sample time for the metric is estimated upon as the module
    docstring says. A node without one gets a value only when it is in `only_placed` (it runs
    nothing but recent placements) and the metric has samples elsewhere: every placement counts
    whole, and the node is listed even with nothing to add (0, its known load). Other nodes
    without a value stay without one.
    """
    found: dict[MetricName, dict[NodeName, float]] = {}
    scale = request_scale or {}
    own_usage = pod_usage or {}
    measured = {metric: times for metric in resources if (times := sample_times.get(metric))}
    if only_placed:
        for metric, times in measured.items():
            column = found.setdefault(metric, {})
            for node in only_placed:
                if node not in times:
                    column[node] = 0.0
    for placement in placements:
        own = own_usage.get((placement.namespace, placement.name), {})
        peers = usage.get(placement.workload, {})
        cap = capacity.get(placement.node) or default_capacity
        for metric, resource in resources.items():
            times = measured.get(metric)
            if times is None:
                continue
            sampled = times.get(placement.node)
            if sampled is None:
                if placement.node not in only_placed:
                    continue
                share = 1.0  # no sample yet: none of the pod's load is in one
            elif is_covered(placement, sampled, window):
                continue
            else:
                share = uncovered_share(placement, sampled, window)
            load = own.get(resource)
            if load is None:
                load = peers.get(resource)
            if load is None:
                load = placement.requests.get(resource, 0.0) * scale.get(resource, 1.0)
            amount = load * share
            size = cap.get(resource) or default_capacity.get(resource, 0.0)
            if amount <= 0 or size <= 0:
                continue
            column = found.setdefault(metric, {})
            column[placement.node] = column.get(placement.node, 0.0) + amount / size
    return {metric: column for metric, column in found.items() if column}


def add_estimates(
    columns: MetricColumns,
    estimates: Estimates,
    cores: Callable[[NodeName], float] | None = None,
    servers: Callable[[NodeName], int] | None = None,
) -> MetricColumns:
    """`columns` with each estimate added to the node's measured value (new mappings). A node
    the estimates name without a measured value (one that runs only recent placements) gets
    the estimate alone; a metric without any measured value gets nothing.

    With `cores` (a node's CPU cores), a `PRESSURE_METRICS` estimate (a share of the node's
    CPU) moves the value along the stall curve instead of adding to it (module docstring), from
    the load the node's measured utilization (`PRESSURE_UTILIZATION`, in `columns`) and
    pressure imply; `servers` gives a node's learned curve (`PlacementTracker.servers`; 0: the
    shared model)."""
    if not estimates:
        return columns
    merged = dict(columns)
    for metric, extra in estimates.items():
        measured = columns.get(metric)
        if not measured or not extra:
            continue
        column: dict[NodeName, float] = dict(measured)
        on_curve = cores is not None and metric in PRESSURE_METRICS
        beside = PRESSURE_UTILIZATION.get(metric)
        utilization = columns.get(beside, {}) if beside is not None else {}
        for node, value in extra.items():
            base = column.get(node, 0.0)
            if on_curve and cores is not None and (size := cores(node)) > 0:
                curve = servers(node) if servers is not None else 0
                column[node] = max(
                    base,
                    pressure_with(
                        base, value * size, size, curve, utilization=utilization.get(node)
                    ),
                )
            else:
                column[node] = base + value
        merged[metric] = column
    return merged


def pressure_with(
    measured: float,
    added: float,
    cores: float,
    servers: int = 0,
    *,
    utilization: float | None = None,
) -> float:
    """The pressure of a node of `cores` cores measured at `measured` (and `utilization`,
    where known) once `added` more cores of load run there: the load the measurements imply
    (`tas.pressure.NodeLoad.measured`: none from a pressure below `tas.pressure.MIN_PSI`),
    plus `added`, on the curve (the node's own with `servers` > 0, `tas.pressure.pressure`)."""
    load = NodeLoad.measured(cores, utilization=utilization, psi=measured, servers=servers)
    return pressure(load.load + added, cores, servers)


def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank percentile `q` (0..100) of `values` (which must not be empty)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def only_metrics(estimates: Estimates, metrics: Iterable[MetricName]) -> Estimates:
    return {m: estimates[m] for m in metrics if estimates.get(m)}


class PlacementTracker:
    """The recent placements, told by a feed (`observe`, `forget`, `set_node`, `set_usage`).

    Thread-safe: the feed calls from a watch thread while requests read. Reads cost one pass
    over the placements still uncovered (a few per node that just received pods) and the
    nodes that run nothing else.
    """

    def __init__(
        self,
        *,
        window: float = DEFAULT_WINDOW,
        resources: Mapping[MetricName, str] = DEFAULT_RESOURCES,
        default_capacity: Mapping[str, float] | None = None,
        forget_after: float = FORGET_AFTER,
        usage_percentile: float | None = None,
        curves: CurveLearner | None = None,
        min_window: float | None = None,
        max_window: float = DEFAULT_MAX_WINDOW,
        metric_window: float = DEFAULT_METRIC_WINDOW,
    ) -> None:
        """`usage_percentile`: a new pod of a workload is estimated at this percentile of its
        workload's per-pod usage; None (the default): at their mean. `curves`: learns each
        node's pressure curve from the columns it is shown (`learn`); None: the shared model.
        `window` is where the window starts; it follows the observed delays (module docstring)
        within [`min_window` (None: `window`), `max_window`], widened to include `window`
        (`max_window` = `window`: a fixed window). `metric_window`: the metrics' averaging
        window, added to the observed delays."""
        for name, seconds in (
            ("window", window),
            ("min_window", window if min_window is None else min_window),
            ("max_window", max_window),
            ("metric_window", metric_window),
        ):
            if not seconds >= 0 or not math.isfinite(seconds):
                raise ValueError(
                    f"{name} must be a non-negative number of seconds, not {seconds!r}"
                )
        if usage_percentile is not None and not 0 < usage_percentile <= 100:
            raise ValueError(f"usage_percentile must be in (0, 100], not {usage_percentile!r}")
        #: The window in force (it follows the observed delays); `shipped_window` the start.
        self.window = window
        self.shipped_window = window
        self.window_limits = (
            min(window, window if min_window is None else min_window),
            max(window, max_window),
        )
        self.metric_window = metric_window
        #: The metric values' age (one 90th percentile per refresh) and the pods' start-ups.
        self.lag = DelayRing()
        self.startup = DelayRing()
        self.resources = dict(resources)
        self.default_capacity = dict(default_capacity or {})
        self.forget_after = forget_after
        self.usage_percentile = usage_percentile
        self._lock = threading.Lock()
        self._recent: dict[PodKey, Placement] = {}
        #: No recent placement was bound before this (a bound, maybe lower than the oldest):
        #: until it ages out, nothing can, and a request need not look at every placement.
        self._oldest_bound = math.inf
        #: Every bound pod seen: its workload, node (a binding never changes) and requests. One
        #: dict of tuples: at 150,000 pods every entry counts (`make bench`, "scale").
        self._bound: dict[PodKey, tuple[WorkloadKey, NodeName, Mapping[str, float]]] = {}
        #: One tuple per workload, however many pods it has.
        self._workloads: dict[WorkloadKey, WorkloadKey] = {}
        #: Per node, how many bound pods it runs, and how many of them are recent placements.
        self._on_node: dict[NodeName, int] = {}
        self._recent_on_node: dict[NodeName, int] = {}
        #: `_only_placed()` until a node's standing in it changes (`_touch`): a burst of
        #: bindings asks for it once per binding, and each binding rarely changes it.
        self._only_placed_memo: frozenset[NodeName] | None = None
        self._scale: dict[str, float] = {}
        self._capacity: dict[NodeName, Mapping[str, float]] = {}
        self._usage: dict[WorkloadKey, Mapping[str, float]] = {}
        self._pod_usage: dict[PodKey, Mapping[str, float]] = {}
        #: Bumped by every change the estimates depend on other than a new placement; with the
        #: identity of the sample times (the view hands out the same mapping until it
        #: refreshes) it keys the cache.
        self._generation = 0
        self._cached: tuple[int, SampleTimes | None, Estimates] = (-1, None, {})
        #: Placements observed since the cache was built: added to it, not recomputed, so a
        #: burst of N binds costs N small updates rather than N passes over every placement.
        self._fresh: list[Placement] = []
        #: Bumped whenever a pod is bound or forgotten, or stops being recent: what `set_usage`
        #: reads besides the usage itself. With the last usage it was fed (`_usage_fed`), a
        #: feed that repeats itself (most do: usage changes once a scrape, the feed runs every
        #: sync) costs one comparison instead of a pass over every pod.
        self._membership = 0
        self._usage_fed: tuple[int, Mapping[PodKey, Mapping[str, float]]] | None = None
        self._curves = curves
        #: Each node's learned curve's servers (0: the shared model), as of the last `learn`.
        self._servers: dict[NodeName, int] = {}
        self._learned_from: SampleTimes | None = None
        #: Recent placements not seen ready yet: each pod's start-up is taken once, when it
        #: is first seen ready (a readiness that flips later is no start-up).
        self._starting: set[PodKey] = set()

    # -- the feed --------------------------------------------------------------------------

    def observe(self, pod: Pod | PodSummary, *, now: float) -> None:
        """A pod as the cluster now has it: bound pods are remembered once, with their bind
        time (or `now` when the pod carries none); finished or deleted pods are forgotten."""
        key = (pod.namespace, pod.name)
        if pod.node_name is None:
            return
        if not still_runs(pod):
            self.forget(pod.namespace, pod.name)
            return
        with self._lock:
            if key in self._bound:
                if key in self._starting and pod.ready_at is not None:
                    self._starting.discard(key)
                    self._observe_startup(pod)
                return
            workload = self._shared_workload(workload_of(pod))
            node = pod.node_name
            self._bound[key] = (workload, node, pod.requests)
            self._membership += 1
            self._on_node[node] = self._on_node.get(node, 0) + 1
            bound_at = bind_time(pod)
            bound_at = now if bound_at is None else min(bound_at, now)
            if now - bound_at <= self.window + self.forget_after:
                placement = Placement(
                    pod.namespace, pod.name, node, bound_at, workload, pod.requests
                )
                self._recent[key] = placement
                self._oldest_bound = min(self._oldest_bound, bound_at)
                self._recent_on_node[node] = self._recent_on_node.get(node, 0) + 1
                self._fresh.append(placement)
                if pod.ready_at is None:
                    self._starting.add(key)
                else:
                    self._observe_startup(pod)
            else:
                # The node now runs a pod no estimate describes.
                self._generation += 1
            self._touch(node)

    def _observe_startup(self, pod: Pod | PodSummary) -> None:
        ready, bound = pod.ready_at, pod.bound_at
        if ready is not None and bound is not None:
            self.startup.add(ready - bound)  # the ring refuses a negative one (clock skew)

    def _shared_workload(self, workload: WorkloadKey) -> WorkloadKey:
        if len(self._workloads) >= _MAX_WORKLOADS:
            self._workloads.clear()  # bounded: workloads come and go (every rollout is new)
        return self._workloads.setdefault(workload, workload)

    def forget(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        with self._lock:
            bound = self._bound.pop(key, None)
            self._pod_usage.pop(key, None)
            if bound is not None:
                self._membership += 1
                _count_down(self._on_node, bound[1])
                self._generation += 1
            placement = self._recent.pop(key, None)
            self._starting.discard(key)
            if placement is not None:
                _count_down(self._recent_on_node, placement.node)
                self._touch(placement.node)
            if bound is not None:
                self._touch(bound[1])

    def set_capacity(self, capacity: Mapping[NodeName, Mapping[str, float]]) -> None:
        """Every node's capacity (its allocatable) at once; nodes not named are gone."""
        with self._lock:
            if capacity != self._capacity:
                self._capacity = dict(capacity)
                self._generation += 1
                self._only_placed_memo = None

    def set_node(self, node: NodeName, allocatable: Mapping[str, float] | None) -> None:
        """One node's capacity (its Node's allocatable), None when the node is gone."""
        with self._lock:
            if allocatable is None:
                if self._capacity.pop(node, None) is not None:
                    self._generation += 1
            elif self._capacity.get(node) != allocatable:
                self._capacity[node] = dict(allocatable)
                self._generation += 1
            self._touch(node)

    def cores(self, node: NodeName) -> float:
        """The node's CPU cores: its allocatable, else the default capacity's (0 if neither)."""
        cap = self._capacity.get(node) or self.default_capacity
        return cap.get("cpu") or self.default_capacity.get("cpu", 0.0)

    def set_usage(self, usage: Mapping[PodKey, Mapping[str, float]]) -> None:
        """Observed per-pod usage (cores, bytes): a recent placement's own usage becomes its
        estimate, and each workload's per-pod mean (or `usage_percentile`) that of its pods
        not measured yet. The mapping is not to be changed after the call (the feeds build a
        new one each time): a call with one equal to the last, while the same pods are bound
        and recent, changes nothing and is skipped."""
        with self._lock:
            fed = self._usage_fed
            if (
                fed is not None
                and fed[0] == self._membership
                and fed[1] is not usage
                and fed[1] == usage
            ):
                return
            values: dict[WorkloadKey, dict[str, list[float]]] = {}
            used: dict[str, float] = {}
            requested: dict[str, float] = {}
            own: dict[PodKey, Mapping[str, float]] = {}
            bound_of, recent = self._bound.get, self._recent
            for key, measured in usage.items():
                bound = bound_of(key)
                if bound is None:
                    continue
                if key in recent:
                    own[key] = dict(measured)
                workload, _, requests = bound
                per_resource = values.get(workload)
                if per_resource is None:
                    per_resource = values[workload] = {}
                for resource, value in measured.items():
                    found = per_resource.get(resource)
                    if found is None:
                        per_resource[resource] = [value]
                    else:
                        found.append(value)
                    asked = requests.get(resource, 0.0)
                    if asked > 0:
                        used[resource] = used.get(resource, 0.0) + value
                        requested[resource] = requested.get(resource, 0.0) + asked
            per_pod = self._per_pod
            usage_of: dict[WorkloadKey, Mapping[str, float]] = {
                workload: {resource: per_pod(found) for resource, found in per_resource.items()}
                for workload, per_resource in values.items()
            }
            scale = {r: max(1.0, used[r] / requested[r]) for r in requested}
            self._usage_fed = (self._membership, usage)
            if usage_of != self._usage or scale != self._scale or own != self._pod_usage:
                self._usage, self._scale, self._pod_usage = usage_of, scale, own
                self._generation += 1

    def learn(self, columns: MetricColumns, *, sample_times: SampleTimes, now: float) -> None:
        """The view's columns as of a refresh: the values' age (the metric lag) and the
        window that follows (module docstring); each node's (utilization, PSI) sample into its
        curve (`tas.calibration.curve`), at the sample's own time. Once per refresh: the view
        hands out the same sample times mapping until it refreshes."""
        if sample_times is self._learned_from:
            return
        with self._lock:
            self._learned_from = sample_times
            ages = [
                age
                for metric in self.resources
                for sampled in sample_times.get(metric, {}).values()
                if math.isfinite(age := now - sampled)
            ]
            if ages:
                self.lag.add(percentile(ages, 100 * DEFAULT_QUANTILE))
            self._follow_delays()
            if self._curves is not None:
                self._learn_curves(self._curves, columns, sample_times=sample_times, now=now)

    def _follow_delays(self) -> None:
        lowest, highest = self.window_limits
        window = follow_window(
            shipped=self.shipped_window,
            lowest=lowest,
            highest=highest,
            lag=self.lag,
            startup=self.startup,
            extra=self.metric_window,
            min_lag_observations=MIN_LAG_OBSERVATIONS,
        )
        if window != self.window:
            self.window = window
            self._generation += 1

    def _learn_curves(
        self, curves: CurveLearner, columns: MetricColumns, *, sample_times: SampleTimes, now: float
    ) -> None:
        utilization = MetricName("cpu_utilization")
        psi = MetricName("cpu_pressure")
        sizes = {n: self.cores(n) for n in columns.get(psi, {})}
        curves.observe_columns(
            columns.get(utilization, {}),
            columns.get(psi, {}),
            cores={n: c for n, c in sizes.items() if c > 0},
            now=now,
            times=sample_times.get(psi),
        )
        curves.retain(self._curves_nodes())
        found = {n: c.override for n, c in curves.curves(sizes).items()}
        if found != self._servers:
            self._servers = found
            self._generation += 1

    def servers(self, node: NodeName) -> int:
        """The node's learned curve (its effective servers), 0 for the shared model."""
        return self._servers.get(node, 0)

    def curves(self) -> Curves:
        """Every node's learned curve (for the operator: self-metrics, `tas explain`)."""
        if self._curves is None:
            return {}
        with self._lock:
            return self._curves.curves({n: self.cores(n) for n in self._curves_nodes()})

    def calibration(self) -> Calibration:
        """What herd control has learned, for the operator (self-metrics): each node's curve,
        the observed delays and the window in force."""
        curves = self.curves()
        with self._lock:
            return Calibration(
                curves=curves,
                metric_lag=self.lag.quantile(DEFAULT_QUANTILE),
                startup=self.startup.quantile(DEFAULT_QUANTILE),
                window=self.window,
            )

    def _curves_nodes(self) -> set[NodeName]:
        return self._capacity.keys() | self._on_node.keys()

    def _per_pod(self, values: list[float]) -> float:
        if self.usage_percentile is None:
            return math.fsum(values) / len(values)
        return percentile(values, self.usage_percentile)

    # -- the reads -------------------------------------------------------------------------

    def placements(self) -> list[Placement]:
        with self._lock:
            return list(self._recent.values())

    def only_placed(self) -> frozenset[NodeName]:
        """The known nodes (with a capacity or a bound pod) running nothing but recent
        placements: a node without a value among them is valued at their estimates."""
        with self._lock:
            return self._only_placed()

    def _only_placed(self) -> frozenset[NodeName]:
        if self._only_placed_memo is None:
            known = self._capacity.keys() | self._on_node.keys()
            self._only_placed_memo = frozenset(n for n in known if self._runs_only_recent(n))
        return self._only_placed_memo

    def _runs_only_recent(self, node: NodeName) -> bool:
        """Every pod bound to the node is a recent placement (none at all counts)."""
        return self._on_node.get(node, 0) == self._recent_on_node.get(node, 0)

    def _touch(self, node: NodeName) -> None:
        """After the node's counts or capacity changed: forget `_only_placed()` if the node's
        standing in it did."""
        memo = self._only_placed_memo
        if memo is None:
            return
        known = node in self._capacity or node in self._on_node
        only = known and self._runs_only_recent(node)
        if only != (node in memo):
            self._only_placed_memo = None

    def estimates(self, *, sample_times: SampleTimes, now: float) -> Estimates:
        """Per metric and node, what to add (cached until the placements, the nodes, the
        usage or the sample times change: requests between two metric refreshes cost a
        lookup)."""
        with self._lock:
            self._prune(now)
            generation, times, cached = self._cached
            incremental = generation == self._generation and times is sample_times
            if incremental and not self._fresh:
                return cached
            placements = self._fresh if incremental else list(self._recent.values())
            self._fresh = []
            generation = self._generation
            usage = self._usage
            pod_usage = self._pod_usage
            capacity = self._capacity
            scale = self._scale
            only_placed = self._only_placed()
            window = self.window
        computed = estimate_load(
            placements,
            sample_times=sample_times,
            window=window,
            resources=self.resources,
            capacity=capacity,
            default_capacity=self.default_capacity,
            usage=usage,
            request_scale=scale,
            pod_usage=pod_usage,
            only_placed=only_placed,
        )
        found: Estimates = _added(cached, computed) if incremental else computed
        with self._lock:
            self._cached = (generation, sample_times, found)
        return found

    def estimator(
        self,
        *,
        sample_times: Callable[[], SampleTimes],
        now: Callable[[], float],
        columns: Callable[[], MetricColumns] | None = None,
    ) -> Callable[[], Estimates]:
        """What the extender calls at each request (`ExtenderService(estimates=...)`): the
        estimates over the metric view's current sample times at the clock's now; with
        `columns` (the view's), each refresh's samples teach the nodes' curves first (`learn`).
        `tas extender` and the simulator's ours wire this one."""

        def estimates() -> Estimates:
            times, at = sample_times(), now()
            if columns is not None:
                self.learn(columns(), sample_times=times, now=at)
            return self.estimates(sample_times=times, now=at)

        return estimates

    def _prune(self, now: float) -> None:
        horizon = self.window + self.forget_after
        if now - self._oldest_bound <= horizon:
            return
        old = [k for k, p in self._recent.items() if now - p.bound_at > horizon]
        self._oldest_bound = min(
            (p.bound_at for k, p in self._recent.items() if now - p.bound_at <= horizon),
            default=math.inf,
        )
        for key in old:
            placement = self._recent.pop(key)
            _count_down(self._recent_on_node, placement.node)
            self._touch(placement.node)
            self._pod_usage.pop(key, None)
            self._starting.discard(key)
        if old:
            self._generation += 1
            self._membership += 1


def _count_down(counts: dict[NodeName, int], node: NodeName) -> None:
    left = counts.get(node, 0) - 1
    if left > 0:
        counts[node] = left
    else:
        counts.pop(node, None)


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
    find_pod: Callable[[str, str], Pod | PodSummary | None],
    clock: Clock,
) -> Callable[[ClusterChange], None]:
    """A cluster change listener (`ObservableCluster.subscribe`) that feeds `tracker` pods."""

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


def follow_cluster(
    tracker: PlacementTracker,
    *,
    find_pod: Callable[[str, str], Pod | PodSummary | None],
    find_node: Callable[[str], Node | None],
    clock: Clock,
) -> Callable[[ClusterChange], None]:
    """A listener that feeds `tracker` pods (`follow_pods`) and each node's capacity from its
    Node's allocatable, as node changes arrive (one node per change, never a full list: nodes
    change often on a large cluster). What `tas extender` and the simulator's `ours` wire."""
    pods = follow_pods(tracker, find_pod, clock)

    def listen(change: ClusterChange) -> None:
        if change.kind is ResourceKind.NODE:
            node = None if change.type is ChangeType.DELETED else find_node(change.name)
            allocatable = node.allocatable if node is not None else None
            tracker.set_node(NodeName(change.name), allocatable or None)
            return
        pods(change)

    return listen
