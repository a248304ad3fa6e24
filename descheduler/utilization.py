"""Node utilization as the upstream LowNodeUtilization and HighNodeUtilization plugins compute
it: what pods request (or what the metrics server or a Prometheus query measures), as a
percentage of each node's allocatable, compared with thresholds; then pods moved from source
nodes while the destination nodes have room.

Quantities are kept in upstream's integer units (CPU in millicores, everything else in whole
units, rounded up as `resource.Quantity` does) so that the percentages, the capped capacities
and the stop conditions come out exactly as upstream's, including its float arithmetic.

`MetricResource` is upstream's name for the one value a Prometheus query gives per node
(0..100, with a capacity of 100).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.framework import (
    EvictOptions,
    Outcome,
    PluginContext,
    PrometheusClient,
    UsageError,
    UsageSources,
    sort_candidates,
)
from descheduler.node_classes import Category, Classification, Thresholds
from descheduler.state import pod_key
from tas.cluster.model import Node, Pod
from tas.types import NodeName, PodKey

log = logging.getLogger(__name__)

CPU, MEMORY, PODS = "cpu", "memory", "pods"
METRIC_RESOURCE = "MetricResource"
BASIC = (CPU, MEMORY, PODS)

Usage = dict[str, int]


# ------------------------------------------------------------------------------ arguments


def parse_evictable_namespaces(r: FieldReader) -> NamespaceFilter:
    namespaces = r.namespaces("evictableNamespaces")
    if namespaces.include:
        r.problem(r.at("evictableNamespaces.include"), "only exclude is supported, as upstream")
    return NamespaceFilter(exclude=namespaces.exclude)


# ---------------------------------------------------------------------------- quantities


def to_units(resource: str, value: float) -> int:
    """A base-unit float as upstream's integer: millicores for CPU, whole units otherwise."""
    if resource == CPU:
        return math.ceil(round(value * 1000, 6))
    return math.ceil(round(value, 6))


def capacity_of(node: Node) -> Usage:
    found = {name: to_units(name, value) for name, value in node.allocatable.items()}
    found[METRIC_RESOURCE] = 100
    return found


def requested_usage(pods: Sequence[Pod], resources: Iterable[str]) -> Usage:
    usage: Usage = {}
    for name in resources:
        if name == PODS:
            usage[name] = len(pods)
        else:
            usage[name] = sum(to_units(name, p.requests.get(name, 0.0)) for p in pods)
    return usage


def percentages(usage: Mapping[str, int], capacity: Mapping[str, int]) -> dict[str, float]:
    found: dict[str, float] = {}
    for name, used in usage.items():
        if name not in capacity:
            continue
        total = capacity[name]
        found[name] = float(used) / float(total) * 100 if total > 0 else 0.0
    return found


def _clamp(value: float) -> float:
    return min(100.0, max(0.0, value))


def deviation_thresholds(
    usages: Mapping[NodeName, Mapping[str, float]],
    low: Mapping[str, float],
    high: Mapping[str, float],
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Low and high bounds around the average usage (and the average)."""
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for usage in usages.values():
        for name in low:
            if name in usage:
                totals[name] = totals.get(name, 0.0) + usage[name]
                counts[name] = counts.get(name, 0) + 1
    average = {name: totals[name] / counts[name] for name in totals}
    return (
        {name: _clamp(average.get(name, 0.0) - low[name]) for name in low},
        {name: _clamp(average.get(name, 0.0) + high[name]) for name in high},
        average,
    )


def below(usage: Mapping[str, float], threshold: Mapping[str, float]) -> bool:
    """Every thresholded resource at or below its threshold."""
    return all(usage.get(name, 0.0) <= limit for name, limit in threshold.items())


def above(usage: Mapping[str, float], threshold: Mapping[str, float]) -> bool:
    """Some thresholded resource above its threshold."""
    return any(usage.get(name, 0.0) > limit for name, limit in threshold.items())


def capped_capacity(node: Node, thresholds: Mapping[str, float], resources: Iterable[str]) -> Usage:
    """The node's capacity capped at the thresholds (full capacity where none is set)."""
    capacity = capacity_of(node)
    capped: Usage = {}
    for name in resources:
        if name not in capacity:
            capped[name] = 0
        elif name not in thresholds:
            capped[name] = capacity[name]
        else:
            capped[name] = int(thresholds[name] * 0.01 * capacity[name])
    return capped


# -------------------------------------------------------------------------- usage sources


class NotSupportedError(Exception):
    """The source cannot say what a single pod uses (a Prometheus query per node)."""


@dataclass
class UsageSnapshot:
    """Usage per node, and what each pod would take with it, from one source."""

    nodes: dict[NodeName, Usage]
    pods: dict[NodeName, list[Pod]]
    pod_usage: Callable[[Pod], Usage]


def requests_snapshot(
    nodes: Sequence[Node], pods: Mapping[NodeName, list[Pod]], resources: Sequence[str]
) -> UsageSnapshot:
    def pod_usage(pod: Pod) -> Usage:
        return {name: to_units(name, pod.requests.get(name, 0.0)) for name in resources}

    return UsageSnapshot(
        nodes={n.name: requested_usage(pods[n.name], resources) for n in nodes},
        pods=dict(pods),
        pod_usage=pod_usage,
    )


def metrics_server_snapshot(
    sources: UsageSources,
    nodes: Sequence[Node],
    pods: Mapping[NodeName, list[Pod]],
    resources: Sequence[str],
) -> UsageSnapshot:
    """Usage from the metrics server (upstream's `actualUsageClient`): `UsageError` when a
    node or one of its resources is missing."""
    measured = sources.node_metrics()
    pod_metrics: Mapping[PodKey, Mapping[str, float]] | None = None
    usage: dict[NodeName, Usage] = {}
    for node in nodes:
        found = measured.get(node.name)
        if found is None:
            raise UsageError(f"node {node.name} is not in the collected metrics")
        values: Usage = {}
        for name in resources:
            if name == PODS:
                values[name] = len(pods[node.name])
            elif name in found:
                values[name] = to_units(name, found[name])
            else:
                raise UsageError(f"no {name} usage in the metrics of node {node.name}")
        usage[node.name] = values

    def pod_usage(pod: Pod) -> Usage:
        nonlocal pod_metrics
        if pod_metrics is None:
            pod_metrics = sources.pod_metrics()
        found = pod_metrics.get(pod_key(pod))
        if found is None:
            raise UsageError(f"no metrics for pod {pod.namespace}/{pod.name}")
        values: Usage = {}
        for name in resources:
            if name == PODS:
                continue
            if name not in found:
                raise UsageError(
                    f"no {name} usage in the metrics of pod {pod.namespace}/{pod.name}"
                )
            values[name] = to_units(name, found[name])
        return values

    return UsageSnapshot(nodes=usage, pods=dict(pods), pod_usage=pod_usage)


def prometheus_snapshot(
    prometheus: PrometheusClient | None,
    query: str,
    nodes: Sequence[Node],
    pods: Mapping[NodeName, list[Pod]],
) -> UsageSnapshot:
    """One value per node from a Prometheus query, 0..1 (upstream's `prometheusUsageClient`):
    `UsageError` when a node is missing or a value is out of range."""
    if prometheus is None:
        raise UsageError("no Prometheus is configured (metricsProviders)")
    values = prometheus.vector(query)
    usage: dict[NodeName, Usage] = {}
    for node in nodes:
        if node.name not in values:
            raise UsageError(f"no value for node {node.name} in the result of {query!r}")
        value = values[node.name]
        if not 0 <= value <= 1:
            raise UsageError(f"the value {value} for node {node.name} is outside 0..1")
        usage[node.name] = {METRIC_RESOURCE: int(value * 100)}

    def pod_usage(pod: Pod) -> Usage:
        raise NotSupportedError

    return UsageSnapshot(nodes=usage, pods=dict(pods), pod_usage=pod_usage)


# ------------------------------------------------------------------------------ evicting


@dataclass
class NodeInfo:
    node: Node
    usage: Usage
    available: Usage
    pods: list[Pod] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.usage.values())


def group_nodes(
    nodes: Sequence[Node],
    snapshot: UsageSnapshot,
    percent: Mapping[NodeName, Mapping[str, float]],
    category: Callable[[Node, Mapping[str, float]], str],
    thresholds: Mapping[str, float],
    resources: Iterable[str],
) -> tuple[list[NodeInfo], list[NodeInfo]]:
    """The underutilized and the overutilized nodes, as `category` names them (any other
    name: appropriately utilized), each logged, with its capacity capped at `thresholds`."""
    groups: dict[str, list[NodeInfo]] = {"underutilized": [], "overutilized": []}
    for node in nodes:
        usage = percent[node.name]
        name = category(node, usage)
        log_node(name if name in groups else "", node.name, snapshot.nodes[node.name], usage)
        if name not in groups:
            continue
        groups[name].append(
            NodeInfo(
                node=node,
                usage=dict(snapshot.nodes[node.name]),
                available=capped_capacity(node, thresholds, resources),
                pods=snapshot.pods[node.name],
            )
        )
    return groups["underutilized"], groups["overutilized"]


def tolerates_some(pod: Pod, destinations: Sequence[Node]) -> bool:
    """The pod tolerates every taint of at least one destination (upstream's
    `PodToleratesTaints`, PreferNoSchedule included)."""
    for node in destinations:
        if len(pod.tolerations) < len(node.taints):
            continue
        if all(any(t.tolerates(taint) for t in pod.tolerations) for taint in node.taints):
            return True
    return False


def total_available(destinations: Sequence[NodeInfo], resources: Sequence[str]) -> Usage | None:
    available: Usage = {}
    for info in destinations:
        for name in resources:
            if name not in info.usage or name not in info.available:
                log.error("No %s usage for node %s: no evictions", name, info.node.name)
                return None
            available[name] = available.get(name, 0) + info.available[name] - info.usage[name]
    return available


def evict_from_sources(
    *,
    strategy: str,
    context: PluginContext,
    sources: Sequence[NodeInfo],
    destinations: Sequence[NodeInfo],
    resources: Sequence[str],
    snapshot: UsageSnapshot,
    removable: Callable[[Pod], bool],
    excluded: NamespaceFilter,
    per_node_limit: int | None,
    reason: Callable[[NodeInfo], str],
    still_over: Callable[[NodeInfo], bool] | None = None,
) -> None:
    """Upstream's `evictPodsFromSourceNodes`: from each source node in turn, lowest priority
    first, evict pods the destinations could take while they have room for every resource and
    the source node still needs relief, where `still_over` tells (together, what each upstream
    plugin's `continueEvictionCond` checks)."""
    available = total_available(destinations, resources)
    if available is None:
        return

    def keep_going(info: NodeInfo) -> bool:
        if still_over is not None and not still_over(info):
            return False
        return all(v > 0 for v in available.values())

    log.info('"Total capacity to be moved" %s', " ".join(f"{k}={v}" for k, v in available.items()))
    targets = [d.node for d in destinations]
    for info in sources:
        candidates = [p for p in info.pods if removable(p)]
        log.info(
            '"Pods on node" node="%s" allPods=%d nonRemovablePods=%d removablePods=%d',
            info.node.name,
            len(info.pods),
            len(info.pods) - len(candidates),
            len(candidates),
        )
        if not candidates:
            continue
        if not keep_going(info):
            continue
        evicted = 0
        for pod in sort_candidates(candidates):
            if per_node_limit is not None and evicted >= per_node_limit:
                break
            if not tolerates_some(pod, targets):
                continue
            if excluded.exclude and not excluded.allows(pod.namespace):
                continue
            if not context.evictor.pre_eviction_filter(pod):
                continue
            try:
                pod_usage: Usage | None = snapshot.pod_usage(pod)
            except NotSupportedError:
                pod_usage = None
            except UsageError as error:
                log.error(
                    "Unable to get the usage of pod %s/%s: %s", pod.namespace, pod.name, error
                )
                continue
            attempt = context.evictor.evict(
                pod, EvictOptions(strategy=strategy, reason=reason(info))
            )
            if attempt.outcome is Outcome.STOPPED:
                return
            if attempt.outcome is Outcome.NODE_LIMIT:
                break
            if not attempt.done:
                continue
            if pod_usage is None and per_node_limit is None:
                break  # nobody can tell what moving it changed: one pod per node
            evicted += 1
            if pod_usage is None:
                continue
            for name in available:
                moved = 1 if name == PODS else pod_usage.get(name, 0)
                info.usage[name] = info.usage.get(name, 0) - moved
                available[name] -= moved
            if not keep_going(info):
                break


def nothing_to_do(
    *, under: int, destinations: int, nodes: int, number_of_nodes: int, no_destination: str
) -> str | None:
    """Why upstream's Low/HighNodeUtilization would stop before evicting, None when it goes on;
    `no_destination` is the plugin's words for having underutilized nodes but nowhere to put
    their pods."""
    if under == 0:
        return (
            "No node is underutilized, nothing to do here, you might tune your thresholds further"
        )
    if under <= number_of_nodes:
        return (
            "Number of nodes underutilized is less or equal than NumberOfNodes, nothing to do here"
        )
    if under == nodes:
        return "All nodes are underutilized, nothing to do here"
    if destinations == 0:
        return no_destination
    return None


def report_classes(
    classified: Callable[[Classification], None],
    *,
    usages: Mapping[NodeName, Mapping[str, float]],
    low: Mapping[str, float],
    high: Mapping[str, float],
    under: Sequence[NodeInfo],
    over: Sequence[NodeInfo],
    destinations: int,
    number_of_nodes: int,
    no_destination: str,
) -> bool:
    """Hand the classification to the cycle (metrics, soft taints) and say whether upstream
    would go on to evict: False, with why logged, when `nothing_to_do` stops it."""
    nothing = nothing_to_do(
        under=len(under),
        destinations=destinations,
        nodes=len(usages),
        number_of_nodes=number_of_nodes,
        no_destination=no_destination,
    )
    classified(
        _classification(
            usages=usages,
            low=low,
            high=high,
            under=[i.node.name for i in under],
            over=[i.node.name for i in over],
            nothing_to_do=nothing,
        )
    )
    if nothing is not None:
        log.info('"%s"', nothing)
    return nothing is None


def _classification(
    *,
    usages: Mapping[NodeName, Mapping[str, float]],
    low: Mapping[str, float],
    high: Mapping[str, float],
    under: Sequence[NodeName],
    over: Sequence[NodeName],
    nothing_to_do: str | None,
) -> Classification:
    categories = {
        node: Category.UNDERUTILIZED
        if node in under
        else Category.OVERUTILIZED
        if node in over
        else Category.APPROPRIATE
        for node in usages
    }
    return Classification(
        thresholds=Thresholds(low=dict(low), high=dict(high)),
        usages={n: dict(u) for n, u in usages.items()},
        categories=categories,
        underutilized=tuple(under),
        overutilized=tuple(over),
        nothing_to_do=nothing_to_do,
    )


def log_node(
    category: str, node: NodeName, raw: Mapping[str, int], percent: Mapping[str, float]
) -> None:
    rounded = {k: round(v) for k, v in percent.items()}
    if category:
        log.info(
            '"Node has been classified" category="%s" node="%s" usage=%s usagePercentage=%s',
            category,
            node,
            dict(raw),
            rounded,
        )
    else:
        log.info(
            '"Node is appropriately utilized" node="%s" usage=%s usagePercentage=%s',
            node,
            dict(raw),
            rounded,
        )
