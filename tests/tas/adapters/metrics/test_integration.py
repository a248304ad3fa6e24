"""The metric sources against real processes: three node-exporters and a Prometheus.

One node-exporter per simulated node (a, b, c), each with its own textfile directory and the
pressure collector on, and a Prometheus scraping them every second with `instance` relabelled
to the node name, all on 127.0.0.1. Covers: a health value written into node b's textfile
reaching the Prometheus, node-exporter and textfile sources; this machine's PSI and utilization
as derived metrics for every node; a Prometheus outage keeping values until max age, then
reading as missing, and recovery after Prometheus restarts, in the same view.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tas.adapters.metrics import open_metric_view
from tas.adapters.metrics.textfile import write_node_series
from tas.metrics import RefreshingMetricView
from tas.types import MetricColumns, MetricName
from tests.processes import Process
from tests.tas.adapters.metrics.processes import (
    metrics_without_psi,
    node_exporter,
    prometheus,
    psi_available,
    wait_for,
)

pytestmark = pytest.mark.integration

NODES = ("a", "b", "c")
HEALTH = MetricName("health_metric")
CPU_PRESSURE = MetricName("cpu_pressure")
PSI_REASON = "/proc/pressure/cpu is unreadable here (kernel without PSI, or psi=0): no PSI to check"


@dataclass
class Cluster:
    root: Path
    exporters: dict[str, Process]
    prometheus: Process

    def textfile_dir(self, node: str) -> Path:
        return self.root / node

    @property
    def all_nodes_dir(self) -> Path:
        """`<node>.prom` of every node (symlinks into each exporter's directory)."""
        return self.root / "all"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("metrics-cluster")
    (root / "all").mkdir()
    started: list[Process] = []
    try:
        exporters = {}
        for node in NODES:
            (root / node).mkdir()
            write_node_series(root / node, node, {"node_health_metric": 0})
            (root / "all" / f"{node}.prom").symlink_to(root / node / f"{node}.prom")
            exporters[node] = node_exporter(root / node, root / f"{node}-exporter.log")
            exporters[node].start()
            started.append(exporters[node])
        targets = {
            node: exporter.url.removeprefix("http://") for node, exporter in exporters.items()
        }
        server = prometheus(targets, root)
        server.start()
        started.append(server)
        write_node_series(root / "b", "b", {"node_health_metric": 2})
        yield Cluster(root, exporters, server)
    finally:
        for process in started:
            process.stop()


def all_ratios(columns: MetricColumns, metrics: list[MetricName]) -> bool:
    return all(set(columns.get(m, {})) == set(NODES) for m in metrics)


def assert_ratios(columns: MetricColumns, metrics: list[MetricName]) -> None:
    for metric in metrics:
        for node in NODES:
            assert 0.0 <= columns[metric][node] <= 1.0, (metric, node, columns[metric])  # type: ignore[index]


@pytest.fixture
def prometheus_view(cluster: Cluster) -> Iterator[RefreshingMetricView]:
    view = open_metric_view(f"prometheus:{cluster.prometheus.url}", sync_period=1.0)
    yield view
    view.stop()


def test_a_health_value_written_to_node_bs_textfile_reaches_the_prometheus_source(
    cluster: Cluster, prometheus_view: RefreshingMetricView
) -> None:
    prometheus_view.set_wanted([HEALTH])
    # Prometheus scrapes the three exporters independently: wait until every node's latest
    # sample is in, then check the whole column.
    expected = {"a": 0.0, "b": 2.0, "c": 0.0}
    columns = wait_for(prometheus_view, lambda c: dict(c.get(HEALTH, {})) == expected)
    assert columns[HEALTH] == expected


def test_this_machines_pressure_appears_as_cpu_pressure_for_every_node_through_prometheus(
    cluster: Cluster, prometheus_view: RefreshingMetricView
) -> None:
    if not psi_available():
        pytest.skip(PSI_REASON)
    prometheus_view.set_wanted([CPU_PRESSURE])
    columns = wait_for(prometheus_view, lambda c: all_ratios(c, [CPU_PRESSURE]))
    assert_ratios(columns, [CPU_PRESSURE])


def test_utilization_and_pressure_ratios_come_through_prometheus(
    cluster: Cluster, prometheus_view: RefreshingMetricView
) -> None:
    metrics = metrics_without_psi()
    prometheus_view.set_wanted(metrics)
    columns = wait_for(prometheus_view, lambda c: all_ratios(c, metrics))
    assert_ratios(columns, metrics)


def test_the_node_exporter_source_reads_the_same_values_straight_from_the_exporters(
    cluster: Cluster,
) -> None:
    targets = ",".join(f"{node}={e.url}" for node, e in cluster.exporters.items())
    view = open_metric_view(f"node-exporter:{targets}", sync_period=1.0)
    try:
        metrics = metrics_without_psi()
        view.set_wanted([HEALTH, *metrics])
        # Rates need two scrapes some time apart.
        columns = wait_for(view, lambda c: all_ratios(c, metrics), timeout=15.0)
        assert columns[HEALTH] == {"a": 0.0, "b": 2.0, "c": 0.0}
        assert_ratios(columns, metrics)
        assert view.failing == {}
    finally:
        view.stop()


def test_the_textfile_source_reads_the_same_files_the_exporters_serve(cluster: Cluster) -> None:
    view = open_metric_view(f"textfile:{cluster.all_nodes_dir}", sync_period=1.0)
    view.set_wanted([HEALTH])
    view.refresh_once()
    assert view.columns() == {HEALTH: {"a": 0.0, "b": 2.0, "c": 0.0}}
    view.stop()


class ShiftedClock:
    """Real time, plus an offset the test moves to age the values deterministically."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.offset)

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        return stop.wait(seconds)


def test_a_prometheus_outage_keeps_values_until_max_age_and_recovers_after_restart(
    cluster: Cluster,
) -> None:
    clock = ShiftedClock()
    registry = CollectorRegistry()
    view = open_metric_view(
        f"prometheus:{cluster.prometheus.url}",
        sync_period=1.0,
        max_age=20.0,
        clock=clock,
        registry=registry,
    )
    view.set_wanted([HEALTH])
    try:
        wait_for(view, lambda c: c.get(HEALTH, {}).get("b") == 2.0)  # type: ignore[call-overload]

        cluster.prometheus.stop()
        view.refresh_once()
        assert HEALTH in view.failing
        assert view.columns()[HEALTH]["b"] == 2.0  # type: ignore[index]  # kept: not yet stale
        errors = registry.get_sample_value(
            "tas_metric_fetch_errors_total", {"source": "prometheus", "target": "health_metric"}
        )
        assert errors == 1.0

        clock.offset = 25.0  # every sample is now older than max age
        assert view.columns()[HEALTH] == {}
        age = registry.get_sample_value("tas_metric_age_seconds", {"metric": "health_metric"})
        assert age is not None
        assert age > 20.0

        clock.offset = 0.0
        cluster.prometheus.start()
        # Every exporter again: each target is scraped on its own schedule after the restart.
        every = {"a": 0.0, "b": 2.0, "c": 0.0}
        columns = wait_for(view, lambda c: c.get(HEALTH) == every)
        assert columns[HEALTH] == every
        assert view.failing == {}
    finally:
        view.stop()
        if not cluster.prometheus.running:
            cluster.prometheus.start()
