"""How a policy's metric name becomes series: the adapter convention and the derived metrics.

TAS users know metrics by their prometheus-adapter names, which drop the `node_` prefix: a rule
on `health_metric` reads the series `node_health_metric` (the exact name is the fallback).
On top of that this project offers derived metrics under stable names, computed from the
node-exporter counters every node already exports (PSI pressure stall rates, utilization).
"""

from __future__ import annotations

import re
from enum import StrEnum

from tas.types import MetricName

_IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def series_names(metric: MetricName) -> tuple[str, str]:
    """The series a metric reads, in order of preference: `node_<metric>`, then `<metric>`."""
    return f"node_{metric}", metric


class Derived(StrEnum):
    """Metrics computed from node-exporter series; every value is a ratio in 0..1."""

    CPU_PRESSURE = "cpu_pressure"
    MEMORY_PRESSURE = "memory_pressure"
    IO_PRESSURE = "io_pressure"
    CPU_UTILIZATION = "cpu_utilization"
    MEMORY_UTILIZATION = "memory_utilization"
    #: The load average per CPU, at most 1: 1 when at least as many tasks are runnable as the
    #: node has CPUs (its demand reaches beyond them), below 1 when every runnable task runs.
    CPU_LOAD = "cpu_load"


#: The PSI "some" counter (seconds some task waited) behind each pressure metric.
PRESSURE_COUNTERS: dict[Derived, str] = {
    Derived.CPU_PRESSURE: "node_pressure_cpu_waiting_seconds_total",
    Derived.MEMORY_PRESSURE: "node_pressure_memory_waiting_seconds_total",
    Derived.IO_PRESSURE: "node_pressure_io_waiting_seconds_total",
}
CPU_SECONDS = "node_cpu_seconds_total"
#: The kernel's one-minute load average (runnable and uninterruptible tasks), node-exporter's.
LOAD1 = "node_load1"
MEM_AVAILABLE = "node_memory_MemAvailable_bytes"
MEM_TOTAL = "node_memory_MemTotal_bytes"

#: Every series the derived metrics are computed from.
DERIVED_INPUTS: frozenset[str] = frozenset(
    {*PRESSURE_COUNTERS.values(), CPU_SECONDS, LOAD1, MEM_AVAILABLE, MEM_TOTAL}
)


def derived(metric: MetricName) -> Derived | None:
    try:
        return Derived(metric)
    except ValueError:
        return None


def derived_promql(metric: Derived, *, rate_window: str = "1m") -> str:
    """The PromQL computing a derived metric from node-exporter series (one value per target)."""
    if metric in PRESSURE_COUNTERS:
        return f"rate({PRESSURE_COUNTERS[metric]}[{rate_window}])"
    if metric is Derived.CPU_UTILIZATION:
        idle = f'rate({CPU_SECONDS}{{mode="idle"}}[{rate_window}])'
        return f"1 - avg without (cpu, mode) ({idle})"
    if metric is Derived.CPU_LOAD:
        cpus = f'count without (cpu, mode) ({CPU_SECONDS}{{mode="idle"}})'
        return f"clamp_max({LOAD1} / {cpus}, 1)"
    return f"1 - {MEM_AVAILABLE} / {MEM_TOTAL}"


def promql_selector(series: str) -> str:
    """A PromQL selector for a series name, quoting names PromQL cannot write bare."""
    if _IDENTIFIER.fullmatch(series):
        return series
    escaped = series.replace("\\", "\\\\").replace('"', '\\"')
    return f'{{__name__="{escaped}"}}'
