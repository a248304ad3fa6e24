"""Node usage for load-aware rebalancing, read from the metric view's fresh 0..1 values.

Each signal is a built-in metric (metrics.md) scaled to 0..100. The combined CPU signal is the
OpenShift `PrometheusCPUCombined` idea: CPU utilization says enough while the fleet has room,
but once the average worker utilization reaches 0.8 every node looks busy, and pressure (PSI)
tells the nodes where tasks actually wait apart. PSI counts only on a node that is also busy
(utilization > 0.7): pressure on an idle node comes from pods' own CPU limits, and moving pods
away would not help them.

A node without a fresh value has no usage and is never classified (never act on stale data).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable

from tas.types import MetricColumns, MetricName, NodeName


class Signal(enum.StrEnum):
    """A node's load as the load-aware strategy reads it: a built-in 0..1 metric, as 0..100."""

    CPU_UTILIZATION = "cpu_utilization"
    CPU_PRESSURE = "cpu_pressure"
    MEMORY_PRESSURE = "memory_pressure"
    MEMORY_UTILIZATION = "memory_utilization"
    IO_PRESSURE = "io_pressure"
    #: Utilization while the fleet is not busy, pressure (only where busy) when it is.
    CPU_COMBINED = "cpu_combined"


#: The signals the CPU stall model (`tas.pressure`) speaks for: each is the node's CPU.
CPU_SIGNALS = frozenset({Signal.CPU_UTILIZATION, Signal.CPU_PRESSURE, Signal.CPU_COMBINED})

#: Average worker CPU utilization from which the combined signal reads pressure.
COMBINED_SWITCH = 0.8
#: Utilization above which a node's PSI counts as load.
BUSY = 0.7


def metric_names(signals: Iterable[Signal]) -> set[MetricName]:
    """The metric names the view must refresh for these signals."""
    names: set[MetricName] = set()
    for signal in signals:
        if signal is Signal.CPU_COMBINED:
            names |= {MetricName(Signal.CPU_UTILIZATION), MetricName(Signal.CPU_PRESSURE)}
        else:
            names.add(MetricName(signal.value))
    return names


def _percent(value: float) -> float:
    return min(100.0, max(0.0, value * 100.0))


def combined_cpu(
    utilization: float, pressure: float | None, *, average_utilization: float
) -> float | None:
    """The combined CPU value of one node, 0..1 (None when the pressure it needs is missing)."""
    if average_utilization < COMBINED_SWITCH:
        return utilization
    if pressure is None:
        return None
    return pressure if utilization > BUSY else 0.0


def node_usages(
    metrics: MetricColumns, signals: Collection[Signal], nodes: Collection[NodeName]
) -> dict[NodeName, dict[str, float]]:
    """Usage 0..100 per node and signal; a node lacking a value for a signal lacks that key."""
    usages: dict[NodeName, dict[str, float]] = {node: {} for node in nodes}
    for signal in signals:
        if signal is Signal.CPU_COMBINED:
            _add_combined(metrics, nodes, usages)
            continue
        column = metrics.get(MetricName(signal.value), {})
        for node in nodes:
            if node in column:
                usages[node][signal.value] = _percent(column[node])
    return usages


def _add_combined(
    metrics: MetricColumns,
    nodes: Collection[NodeName],
    usages: dict[NodeName, dict[str, float]],
) -> None:
    utilization = metrics.get(MetricName(Signal.CPU_UTILIZATION), {})
    pressure = metrics.get(MetricName(Signal.CPU_PRESSURE), {})
    known = [utilization[n] for n in nodes if n in utilization]
    if not known:
        return
    average = sum(known) / len(known)
    for node in nodes:
        if node not in utilization:
            continue
        value = combined_cpu(utilization[node], pressure.get(node), average_utilization=average)
        if value is not None:
            usages[node][Signal.CPU_COMBINED.value] = _percent(value)
