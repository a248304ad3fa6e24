"""Metric values from one node's scrape: the name convention and the derived metrics.

Covers: `node_<name>` before `<name>`, sample timestamps over the fetch time, derived gauges
written directly, PSI and CPU rates from two successive scrapes (first scrape, unchanged scrape,
counter reset, clamping), memory utilization, and which series are worth parsing.
"""

from __future__ import annotations

import pytest

from tas.metrics.scrape import NodeCounters, read_values, wanted_series
from tas.metrics.source import Sample
from tas.metrics.textformat import parse_text
from tas.types import MetricName

HEALTH = MetricName("health_metric")
CPU_PRESSURE = MetricName("cpu_pressure")
IO_PRESSURE = MetricName("io_pressure")
MEMORY_PRESSURE = MetricName("memory_pressure")
CPU_UTILIZATION = MetricName("cpu_utilization")
MEMORY_UTILIZATION = MetricName("memory_utilization")
DERIVED = [CPU_PRESSURE, IO_PRESSURE, MEMORY_PRESSURE, CPU_UTILIZATION, MEMORY_UTILIZATION]


def exporter_text(*, cpu_wait: float, io_wait: float, mem_wait: float, idle: float) -> str:
    """node-exporter output of a 2-CPU node whose CPUs were each idle `idle` seconds."""
    return f"""\
node_pressure_cpu_waiting_seconds_total {cpu_wait}
node_pressure_io_waiting_seconds_total {io_wait}
node_pressure_io_stalled_seconds_total 999
node_pressure_memory_waiting_seconds_total {mem_wait}
node_cpu_seconds_total{{cpu="0",mode="idle"}} {idle}
node_cpu_seconds_total{{cpu="0",mode="user"}} 5000
node_cpu_seconds_total{{cpu="1",mode="idle"}} {idle}
node_memory_MemAvailable_bytes 250
node_memory_MemTotal_bytes 1000
"""


def read(
    text: str, names: list[MetricName], at: float, counters: NodeCounters | None = None
) -> dict[MetricName, Sample]:
    return read_values(
        parse_text(text), names=names, fetched_at=at, counters=counters or NodeCounters()
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("node_health_metric 2\nhealth_metric 7", 2.0, id="node-prefix-first"),
        pytest.param("health_metric 7", 7.0, id="exact-name-fallback"),
        pytest.param('node_health_metric{a="1"} 3\nnode_health_metric{a="2"} 4', 3.0, id="first"),
    ],
)
def test_a_policy_metric_reads_node_prefixed_series_first(text: str, expected: float) -> None:
    assert read(text, [HEALTH], at=100.0) == {HEALTH: Sample(expected, 100.0)}


def test_an_explicit_sample_timestamp_beats_the_fetch_time() -> None:
    values = read("node_health_metric 1 50000", [HEALTH], at=100.0)
    assert values == {HEALTH: Sample(1.0, 50.0)}


def test_a_metric_the_scrape_lacks_is_absent() -> None:
    assert read("other 1", [HEALTH], at=1.0) == {}


def test_derived_gauges_written_directly_are_used_as_they_are() -> None:
    text = "node_cpu_pressure 0.25\nnode_memory_utilization 0.5\n" + exporter_text(
        cpu_wait=0, io_wait=0, mem_wait=0, idle=0
    )
    values = read(text, [CPU_PRESSURE, MEMORY_UTILIZATION], at=10.0)
    assert values == {CPU_PRESSURE: Sample(0.25, 10.0), MEMORY_UTILIZATION: Sample(0.5, 10.0)}


def test_rates_need_two_scrapes_and_are_fractions_of_the_elapsed_time() -> None:
    counters = NodeCounters()
    first = exporter_text(cpu_wait=10, io_wait=20, mem_wait=30, idle=100)
    assert set(read(first, DERIVED, at=100.0, counters=counters)) == {MEMORY_UTILIZATION}
    # 4 s later: cpu waited 1 s, io 2 s, memory 0 s; each CPU was idle 3 of 4 s.
    second = exporter_text(cpu_wait=11, io_wait=22, mem_wait=30, idle=103)
    values = read(second, DERIVED, at=104.0, counters=counters)
    assert values == {
        CPU_PRESSURE: Sample(0.25, 104.0),
        IO_PRESSURE: Sample(0.5, 104.0),
        MEMORY_PRESSURE: Sample(0.0, 104.0),
        CPU_UTILIZATION: Sample(0.25, 104.0),
        MEMORY_UTILIZATION: Sample(0.75, 104.0),
    }


def test_an_unchanged_scrape_keeps_the_last_rate_and_its_time() -> None:
    counters = NodeCounters()
    read(exporter_text(cpu_wait=0, io_wait=0, mem_wait=0, idle=0), [CPU_PRESSURE], 10.0, counters)
    text = exporter_text(cpu_wait=1, io_wait=0, mem_wait=0, idle=0)
    assert read(text, [CPU_PRESSURE], 12.0, counters) == {CPU_PRESSURE: Sample(0.5, 12.0)}
    assert read(text, [CPU_PRESSURE], 12.0, counters) == {CPU_PRESSURE: Sample(0.5, 12.0)}


def test_a_counter_reset_gives_no_rate_until_the_next_scrape() -> None:
    counters = NodeCounters()
    for at, wait in [(10.0, 50.0), (12.0, 51.0)]:
        text = exporter_text(cpu_wait=wait, io_wait=0, mem_wait=0, idle=0)
        read(text, [CPU_PRESSURE], at, counters)
    reset = exporter_text(cpu_wait=0.5, io_wait=0, mem_wait=0, idle=0)
    assert read(reset, [CPU_PRESSURE], 14.0, counters) == {}
    after = exporter_text(cpu_wait=1.5, io_wait=0, mem_wait=0, idle=0)
    assert read(after, [CPU_PRESSURE], 16.0, counters) == {CPU_PRESSURE: Sample(0.5, 16.0)}


def test_scrape_jitter_cannot_push_a_ratio_outside_zero_to_one() -> None:
    counters = NodeCounters()
    read(exporter_text(cpu_wait=0, io_wait=0, mem_wait=0, idle=0), [CPU_PRESSURE], 10.0, counters)
    text = exporter_text(cpu_wait=2.1, io_wait=0, mem_wait=0, idle=0)
    assert read(text, [CPU_PRESSURE], 12.0, counters) == {CPU_PRESSURE: Sample(1.0, 12.0)}


def test_only_series_a_wanted_metric_can_use_are_parsed() -> None:
    assert wanted_series([HEALTH]) == {"node_health_metric", "health_metric"}
    assert "node_pressure_cpu_waiting_seconds_total" in wanted_series([CPU_PRESSURE])
    assert "node_cpu_pressure" in wanted_series([CPU_PRESSURE])


CPU_LOAD = MetricName("cpu_load")


@pytest.mark.parametrize(
    ("load1", "expected"),
    [
        pytest.param(1.0, 0.5, id="one task runnable on two CPUs"),
        pytest.param(2.0, 1.0, id="as many runnable as CPUs"),
        pytest.param(7.0, 1.0, id="demand beyond the CPUs, clamped"),
    ],
)
def test_cpu_load_is_the_load_average_per_cpu(load1: float, expected: float) -> None:
    text = f"node_load1 {load1}\n" + exporter_text(cpu_wait=0, io_wait=0, mem_wait=0, idle=9)
    assert read(text, [CPU_LOAD], at=10.0) == {CPU_LOAD: Sample(expected, 10.0)}


def test_cpu_load_without_the_cpus_or_the_load_average_is_absent() -> None:
    assert read("node_load1 3\n", [CPU_LOAD], at=10.0) == {}
    no_load = exporter_text(cpu_wait=0, io_wait=0, mem_wait=0, idle=9)
    assert read(no_load, [CPU_LOAD], at=10.0) == {}
    assert "node_load1" in wanted_series([CPU_LOAD])
