"""Turning scraped Prometheus text into metric values, for the node-exporter and textfile sources.

Without Prometheus there is no `rate()`: the pressure and CPU metrics are computed here from two
successive scrapes of a node's counters, so each node keeps a little state between scrapes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tas.metrics.names import (
    CPU_SECONDS,
    DERIVED_INPUTS,
    LOAD1,
    MEM_AVAILABLE,
    MEM_TOTAL,
    PRESSURE_COUNTERS,
    Derived,
    derived,
    series_names,
)
from tas.metrics.source import Sample
from tas.metrics.textformat import TextSample
from tas.types import MetricName

#: The series a derived metric needs, keyed by an internal counter name.
_IDLE = "cpu_idle"


def wanted_series(names: Iterable[MetricName]) -> frozenset[str]:
    """Every series name worth parsing to answer `names` (parse filter)."""
    series: set[str] = set()
    for name in names:
        series.update(series_names(name))
        if derived(name) is not None:
            series.update(DERIVED_INPUTS)
    return frozenset(series)


@dataclass
class NodeCounters:
    """What one node remembers between scrapes to compute rates."""

    #: counter key -> (value, sample time) from the previous scrape.
    previous: dict[str, Sample] = field(default_factory=dict)
    #: the last computed rates, kept while the counters have not moved on (unchanged file).
    rates: dict[Derived, Sample] = field(default_factory=dict)
    cpus: int = 0


def read_values(
    samples: list[TextSample],
    *,
    names: Iterable[MetricName],
    fetched_at: float,
    counters: NodeCounters,
) -> dict[MetricName, Sample]:
    """The value of each wanted metric in one node's scrape (absent when it has none).

    A series found under the name convention wins; a derived metric is computed only when the
    scrape has no such gauge (the simulated world writes `node_cpu_pressure` directly).
    """
    first: dict[str, Sample] = {}
    for sample in samples:
        if sample.name not in first:
            first[sample.name] = Sample(sample.value, _time(sample, fetched_at))
    wanted = list(names)
    if any(derived(name) is not None for name in wanted):
        _update_rates(samples, fetched_at, counters)
    values: dict[MetricName, Sample] = {}
    for name in wanted:
        found = next((first[s] for s in series_names(name) if s in first), None)
        kind = derived(name)
        if found is None and kind is Derived.MEMORY_UTILIZATION:
            found = _memory_utilization(first)
        elif found is None and kind is Derived.CPU_LOAD:
            found = _cpu_load(first, counters.cpus)
        elif found is None and kind is not None:
            found = counters.rates.get(kind)
        if found is not None:
            values[name] = found
    return values


def _time(sample: TextSample, fetched_at: float) -> float:
    return fetched_at if sample.timestamp is None else sample.timestamp


def _memory_utilization(first: dict[str, Sample]) -> Sample | None:
    available, total = first.get(MEM_AVAILABLE), first.get(MEM_TOTAL)
    if available is None or total is None or not total.value > 0:
        return None
    ratio = 1.0 - available.value / total.value
    return Sample(_clamp(ratio), max(available.timestamp, total.timestamp))


def _cpu_load(first: dict[str, Sample], cpus: int) -> Sample | None:
    """The load average per CPU, at most 1 (`Derived.CPU_LOAD`); the CPUs are those of this
    scrape's idle counters."""
    load = first.get(LOAD1)
    if load is None or cpus <= 0:
        return None
    return Sample(_clamp(load.value / cpus), load.timestamp)


def _update_rates(samples: list[TextSample], fetched_at: float, counters: NodeCounters) -> None:
    current: dict[str, Sample] = {}
    idle_sum, idle_time, cpus = 0.0, fetched_at, 0
    by_counter = {series: kind for kind, series in PRESSURE_COUNTERS.items()}
    for sample in samples:
        if sample.name in by_counter and by_counter[sample.name].value not in current:
            current[by_counter[sample.name].value] = Sample(sample.value, _time(sample, fetched_at))
        elif sample.name == CPU_SECONDS and sample.labels.get("mode") == "idle":
            idle_sum += sample.value
            idle_time = _time(sample, fetched_at)
            cpus += 1
    if cpus:
        current[_IDLE] = Sample(idle_sum, idle_time)
    for key, now in current.items():
        before = counters.previous.get(key)
        if before is None or now.timestamp <= before.timestamp:
            continue  # first scrape, or the same one again (an unchanged file): keep the rate
        per_second = (now.value - before.value) / (now.timestamp - before.timestamp)
        if key == _IDLE:
            if cpus != counters.cpus:
                continue  # CPUs came or went: the sums do not compare
            kind, rate = Derived.CPU_UTILIZATION, 1.0 - per_second / cpus
        else:
            kind, rate = Derived(key), per_second
        if now.value < before.value:
            counters.rates.pop(kind, None)  # counter reset (restart): no rate until next scrape
        else:
            counters.rates[kind] = Sample(_clamp(rate), now.timestamp)
    counters.previous.update(current)
    counters.cpus = cpus


def _clamp(ratio: float) -> float:
    # Scrape jitter can push a measured ratio a little outside 0..1.
    return min(1.0, max(0.0, ratio))
