"""Nodes that run no workload: their usage is known before their first sample.

A node that just joined has no fresh value until its exporter is scraped and a rate window
has passed (a minute or two). Left unknown, it is neither a destination nor part of the
fleet's average, so a saturated fleet joined by empty nodes reads "All nodes are
underutilized" (every old node at the mean of the old nodes) until their samples arrive,
while pods stall.

A node that runs nothing but DaemonSet and static pods is not unknown, though: it is idle but
for its daemons. `idle_columns` gives such a node, where it lacks a value, the usage its pods imply:
CPU and memory utilization from what they use (measured, or requested until measured) over
its allocatable, and CPU pressure from that CPU load on the stall curve (`tas.pressure`), as
the extender estimates a node that runs only recent placements (docs/recent-placements.md).

An estimate makes a node a destination and counts in the fleet's average; it never makes a
node a source or a soft-taint target (`classify_with_idle` leaves an estimated node out
rather than call it overutilized): nothing is done *to* a node on anything but its samples.
Nodes running any other pod stay unknown: nothing is known about those pods' load, and only
an absence of workload is read as idle.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from descheduler.classify import ThresholdSpec, classify
from descheduler.framework import PodUsage
from descheduler.node_classes import Category, Classification
from descheduler.room import pod_cpu_cores
from descheduler.signals import Signal, node_usages
from descheduler.state import CycleState, pod_key
from tas.calibration.curve import Curves
from tas.cluster.model import Pod
from tas.pressure import pressure
from tas.types import MetricColumn, MetricColumns, MetricName, NodeName

_CPU_UTILIZATION = MetricName(Signal.CPU_UTILIZATION)
_CPU_PRESSURE = MetricName(Signal.CPU_PRESSURE)
_MEMORY_UTILIZATION = MetricName(Signal.MEMORY_UTILIZATION)


def _node_bound(pod: Pod) -> bool:
    """A pod that comes with the node rather than with a workload: a DaemonSet's, or a static
    pod (its mirror; kubespray runs its API proxy so on every worker)."""
    return pod.is_mirror or pod.is_static or any(o.kind == "DaemonSet" for o in pod.owners)


def _memory_used(pod: Pod, measured: PodUsage, memory: float) -> float:
    """The pod's memory in bytes on a node of `memory`: measured, or its requests until it is."""
    share = measured.get(pod_key(pod), {}).get(Signal.MEMORY_UTILIZATION.value)
    if share is not None:
        return share / 100.0 * memory
    return pod.requests.get("memory", 0.0)


def idle_columns(
    state: CycleState, measured: PodUsage, *, curves: Curves | None = None
) -> dict[MetricName, MetricColumn]:
    """Per metric, the estimated value (0..1) of each Ready node that lacks one and runs only
    DaemonSet and static pods (or none). A metric no node has a value for is left alone: that
    is an outage (or a kernel without PSI), and no value is invented for it. Pressure is read
    on the node's learned curve where `curves` has one."""
    learned = curves or {}
    estimates: dict[MetricName, dict[NodeName, float]] = {}

    def estimate(name: MetricName, node: NodeName, value: float) -> None:
        column = state.metrics.get(name, {})
        if column and node not in column:
            estimates.setdefault(name, {})[node] = value

    for node in state.ready_nodes:
        pods = state.pods_on(node.name)
        if not all(_node_bound(p) for p in pods):
            continue
        # In amounts, not per-pod shares (`tas.fit.request_share`), on purpose: the pressure
        # curve takes the node's load in cores, and the node's pods are summed before one
        # division by its allocatable.
        cores = node.allocatable.get("cpu", 0.0)
        if cores > 0:
            load = sum(pod_cpu_cores(p, measured, cores) for p in pods)
            estimate(_CPU_UTILIZATION, node.name, min(1.0, load / cores))
            curve = learned.get(node.name)
            servers = curve.override if curve is not None else 0
            estimate(_CPU_PRESSURE, node.name, pressure(load, cores, servers))
        memory = node.allocatable.get("memory", 0.0)
        if memory > 0:
            used = sum(_memory_used(p, measured, memory) for p in pods)
            estimate(_MEMORY_UTILIZATION, node.name, min(1.0, used / memory))
    return dict(estimates)


def estimated_nodes(
    estimates: Mapping[MetricName, MetricColumn], names: Collection[MetricName]
) -> set[NodeName]:
    """The nodes with an estimate for one of `names` (the metrics a classification reads)."""
    return {node for name in names for node in estimates.get(name, {})}


def classify_with_idle(
    metrics: MetricColumns,
    signals: Collection[Signal],
    nodes: Collection[NodeName],
    spec: ThresholdSpec,
    estimated: Collection[NodeName],
) -> Classification:
    """`classify` over the nodes' usages, where an estimated node that would come out
    overutilized is left out (unknown) instead: an estimate only ever makes a destination.
    Leaving one out lowers the average, so the classification is redone until none is."""
    usages = dict(node_usages(metrics, signals, nodes))
    while True:
        result = classify(usages, spec)
        blamed = [n for n in estimated if result.categories.get(n) is Category.OVERUTILIZED]
        if not blamed:
            return result
        usages.update({node: {} for node in blamed})
