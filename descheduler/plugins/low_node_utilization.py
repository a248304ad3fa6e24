"""LowNodeUtilization, as upstream: move pods from overutilized nodes to underutilized ones,
judged on what pods request (cpu, memory, pods, any extended resource), or on what the metrics
server measures (`metricsUtilization.source: KubernetesMetrics`), or on one value per node from
a Prometheus query (`source: Prometheus`, thresholds on `MetricResource`; the OpenShift PSI
profiles feed it this way).

Static thresholds: a schedulable node is underutilized when every thresholded resource is at or
below `thresholds`, overutilized when any is above `targetThresholds`. With
`useDeviationThresholds` both are distances from the average usage. Nothing moves unless more
than `numberOfNodes` nodes are underutilized, not all of them, and some are overutilized. Pods
leave the most used overutilized nodes first, lowest priority first, while the node is above
its target and the underutilized nodes have room for every resource; a Prometheus value says
nothing about a single pod, so then one pod per node moves per cycle (`evictionLimits.node`
raises it). The telemetry strategy with its own signals is `LoadAware`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.classify import ThresholdSpec
from descheduler.framework import ExtensionPoint, Plugin, PluginContext, PluginName, UsageError
from descheduler.utilization import (
    BASIC,
    METRIC_RESOURCE,
    NodeInfo,
    UsageSnapshot,
    above,
    below,
    capacity_of,
    deviation_thresholds,
    evict_from_sources,
    group_nodes,
    log,
    metrics_server_snapshot,
    parse_evictable_namespaces,
    percentages,
    prometheus_snapshot,
    report_classes,
    requests_snapshot,
)
from tas.cluster.model import Node

NAME = PluginName("LowNodeUtilization")


class MetricsSource(enum.StrEnum):
    KUBERNETES_METRICS = "KubernetesMetrics"
    PROMETHEUS = "Prometheus"


@dataclass(frozen=True, slots=True)
class LowNodeUtilizationArgs(ThresholdSpec):
    evictable_namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)
    #: upstream's `evictionLimits.node`: evictions per node by this plugin, per cycle.
    node_eviction_limit: int | None = None
    metrics_source: MetricsSource | None = None
    prometheus_query: str = ""

    @property
    def resources(self) -> tuple[str, ...]:
        return tuple(self.thresholds)

    @property
    def extended_resources(self) -> tuple[str, ...]:
        """The thresholded resources, plus cpu, memory and pods unless Prometheus is used."""
        if self.metrics_source is MetricsSource.PROMETHEUS:
            return self.resources
        return (*self.resources, *(r for r in BASIC if r not in self.thresholds))


def _parse_metrics(r: FieldReader) -> tuple[MetricsSource | None, str]:
    m = r.child("metricsUtilization")
    metrics_server = m.boolean("metricsServer", False)
    raw = m.choice("source", tuple(s.value for s in MetricsSource))
    p = m.child("prometheus")
    query = p.string("query")
    p.finish()
    m.finish()
    source = MetricsSource(raw) if raw else None
    if metrics_server and source is not None:
        m.problem(m.path, "give source or the deprecated metricsServer, not both")
    if metrics_server:
        source = MetricsSource.KUBERNETES_METRICS
    if source is MetricsSource.KUBERNETES_METRICS and p.raw:
        m.problem(m.at("prometheus"), "only used with source: Prometheus")
    if source is MetricsSource.PROMETHEUS and not query:
        m.problem(m.at("prometheus.query"), "is required with source: Prometheus")
    if source is None and p.raw:
        m.problem(m.at("source"), "is required (KubernetesMetrics or Prometheus)")
    return source, query


def parse_args(r: FieldReader) -> LowNodeUtilizationArgs:
    low = r.percentages("thresholds")
    high = r.percentages("targetThresholds")
    deviation = r.boolean("useDeviationThresholds", False)
    limits = r.child("evictionLimits")
    node_limit = limits.integer("node", None)
    limits.finish()
    source, query = _parse_metrics(r)
    if not low:
        r.problem(r.at("thresholds"), "no resource threshold is configured")
    if not high:
        r.problem(r.at("targetThresholds"), "no resource threshold is configured")
    if low and high and set(low) != set(high):
        r.problem(r.path, "thresholds and targetThresholds must name the same resources")
    elif not deviation:
        for name, value in low.items():
            if name in high and value > high[name]:
                r.problem(
                    f"{r.at('thresholds')}.{name}",
                    f"{value:g} is above targetThresholds.{name} {high[name]:g}",
                )
    if source is MetricsSource.PROMETHEUS and (set(low) | set(high)) - {METRIC_RESOURCE}:
        r.problem(
            r.at("thresholds"),
            f"with source Prometheus the only resource is {METRIC_RESOURCE}",
        )
    return LowNodeUtilizationArgs(
        thresholds=low,
        target_thresholds=high,
        use_deviation_thresholds=deviation,
        number_of_nodes=r.integer("numberOfNodes", 0) or 0,
        evictable_namespaces=parse_evictable_namespaces(r),
        node_eviction_limit=node_limit,
        metrics_source=source,
        prometheus_query=query,
    )


def _snapshot(args: LowNodeUtilizationArgs, context: PluginContext) -> UsageSnapshot:
    state = context.state
    nodes = state.ready_nodes
    pods = {n.name: state.pods_on_ready_node(n.name) for n in nodes}
    resources = args.extended_resources
    if args.metrics_source is MetricsSource.KUBERNETES_METRICS:
        return metrics_server_snapshot(context.usage, nodes, pods, resources)
    if args.metrics_source is MetricsSource.PROMETHEUS:
        return prometheus_snapshot(context.prometheus, args.prometheus_query, nodes, pods)
    return requests_snapshot(nodes, pods, resources)


def run(args: LowNodeUtilizationArgs, context: PluginContext) -> None:
    nodes = context.state.ready_nodes
    try:
        snapshot = _snapshot(args, context)
    except UsageError as error:
        log.error("LowNodeUtilization: cannot read node usage: %s", error)
        return
    percent = {n.name: percentages(snapshot.nodes[n.name], capacity_of(n)) for n in nodes}
    if args.use_deviation_thresholds:
        wanted = {
            n: {k: v for k, v in u.items() if k in args.thresholds} for n, u in percent.items()
        }
        lows, highs, _ = deviation_thresholds(wanted, args.thresholds, args.target_thresholds)
        percent = wanted
    else:
        lows, highs = dict(args.thresholds), dict(args.target_thresholds)

    def category(node: Node, usage: Mapping[str, float]) -> str:
        if not node.unschedulable and below(usage, lows):
            return "underutilized"
        return "overutilized" if above(usage, highs) else ""

    under, over = group_nodes(nodes, snapshot, percent, category, highs, args.extended_resources)
    log.info('"Number of underutilized nodes" totalNumber=%d', len(under))
    log.info('"Number of overutilized nodes" totalNumber=%d', len(over))
    if not report_classes(
        context.classified,
        usages=percent,
        low=lows,
        high=highs,
        under=under,
        over=over,
        destinations=len(over),
        number_of_nodes=args.number_of_nodes,
        no_destination="All nodes are under target utilization, nothing to do here",
    ):
        return
    over.sort(key=lambda i: (-i.total, i.node.name))

    def still_over(info: NodeInfo) -> bool:
        return any(info.available.get(k, 0) < v for k, v in info.usage.items())

    evict_from_sources(
        strategy=NAME,
        context=context,
        sources=over,
        destinations=under,
        resources=args.extended_resources,
        snapshot=snapshot,
        removable=context.evictor.filter,
        excluded=args.evictable_namespaces,
        per_node_limit=args.node_eviction_limit,
        reason=lambda info: _reason(info.node.name, percent[info.node.name], highs),
        still_over=still_over,
    )


def _reason(node: str, usage: dict[str, float], highs: dict[str, float]) -> str:
    over = [
        f"{name} {usage.get(name, 0.0):.0f}% > {limit:.0f}%"
        for name, limit in highs.items()
        if usage.get(name, 0.0) > limit
    ]
    return f"node {node} is overutilized: " + ", ".join(over)


PLUGIN = Plugin.serving(
    ExtensionPoint.BALANCE, NAME, args=(LowNodeUtilizationArgs, parse_args), run=run
)
