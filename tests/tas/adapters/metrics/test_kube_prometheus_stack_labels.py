"""The built-in metrics on kube-prometheus-stack's labels, with real processes.

Two node-exporters, one on 127.0.0.1 and one on 127.0.0.2 (two loopback addresses stand for
two nodes' IPs), each serving its own `node_health_metric` from a textfile, and a Prometheus
scraping them labelled as kube-prometheus-stack's node-exporter ServiceMonitor labels them
(`instance` = `IP:port`, `job` = `node-exporter`, no node label). The Nodes `worker-1`
(InternalIP 127.0.0.1) and `worker-2` (InternalIP 127.0.0.2) are served by the API emulator and
watched by the real Kubernetes adapter. Covers: cpu_pressure, the other derived ratios and
health_metric resolving on the node whose InternalIP each series' instance is (and without the
nodes' addresses, on no node); a node whose InternalIP changes losing its series, counted;
and `tas controller`, run as a user runs it on those labels, labelling the node whose health
value violates the demo policy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.adapters.metrics import open_metric_view
from tas.adapters.metrics.textfile import write_node_series
from tas.cluster.interface import ResourceKind
from tas.metrics import RefreshingMetricView
from tas.types import MetricName
from tests.builders import health_policy_document
from tests.k8s_emulator import KubeEmulator
from tests.processes import Process, free_port, tas_command
from tests.tas.adapters.metrics.processes import (
    metrics_without_psi,
    node_exporter,
    prometheus_labelled_as_kube_prometheus_stack,
    wait_for,
)

pytestmark = pytest.mark.integration

HEALTH = MetricName("health_metric")
#: Node -> its InternalIP, where its node-exporter listens.
NODES = {"worker-1": "127.0.0.1", "worker-2": "127.0.0.2"}
#: Each node's health value: different, so a series on the wrong node shows.
HEALTH_VALUES = {"worker-1": 0.0, "worker-2": 2.0}


@dataclass
class Stack:
    exporters: dict[str, Process]
    prometheus: Process


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("kube-prometheus-stack")
    started: list[Process] = []
    try:
        exporters: dict[str, Process] = {}
        for node, ip in NODES.items():
            textfiles = root / node
            textfiles.mkdir()
            # As `tas set-health` writes it, without a node label: the instance names the node.
            write_node_series(textfiles, "health", {"node_health_metric": HEALTH_VALUES[node]})
            exporters[node] = node_exporter(textfiles, root / f"{node}.log", host=ip)
            exporters[node].start()
            started.append(exporters[node])
        targets = [exporter.url.removeprefix("http://") for exporter in exporters.values()]
        server = prometheus_labelled_as_kube_prometheus_stack(targets, root)
        server.start()
        started.append(server)
        yield Stack(exporters, server)
    finally:
        for process in started:
            process.stop()


def kubeadm_node(name: str, ip: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@pytest.fixture
def nodes(kube_emulator: KubeEmulator) -> Iterator[KubernetesCluster]:
    """The Node cache a component keeps, over the API emulator's two kubeadm-like nodes."""
    for name, ip in NODES.items():
        kube_emulator.create("nodes", kubeadm_node(name, ip))
    cluster = KubernetesCluster(kube_emulator.api_client(), watched=[ResourceKind.NODE])
    cluster.start()
    assert cluster.wait_synced(10.0)
    yield cluster
    cluster.stop()


def view_of(
    stack: Stack, registry: CollectorRegistry, nodes: KubernetesCluster | None
) -> RefreshingMetricView:
    view = open_metric_view(
        f"prometheus:{stack.prometheus.url}",
        sync_period=1.0,
        registry=registry,
        node_addresses=nodes,
    )
    view.set_wanted([HEALTH, *metrics_without_psi()])
    return view


def test_built_in_metrics_resolve_on_the_node_whose_internal_ip_is_the_instance(
    stack: Stack, nodes: KubernetesCluster
) -> None:
    wanted = [HEALTH, *metrics_without_psi()]
    view = view_of(stack, CollectorRegistry(), nodes)
    try:
        columns = wait_for(
            view, lambda c: all(set(c.get(m, {})) == set(NODES) for m in wanted), timeout=40.0
        )
    finally:
        view.stop()
    assert columns[HEALTH] == HEALTH_VALUES
    for metric in metrics_without_psi():
        assert all(0.0 <= value <= 1.0 for value in columns[metric].values()), columns[metric]


def test_without_the_nodes_addresses_the_same_series_resolve_on_no_node(stack: Stack) -> None:
    view = view_of(stack, CollectorRegistry(), None)
    try:
        columns = wait_for(view, lambda c: len(c.get(HEALTH, {})) == len(NODES), timeout=40.0)
    finally:
        view.stop()
    assert set(columns[HEALTH]) == set(NODES.values())  # IPs, which no node is called
    assert not set(columns[HEALTH]) & set(NODES)


def test_a_node_whose_internal_ip_changes_loses_its_series_and_they_are_counted(
    stack: Stack, nodes: KubernetesCluster, kube_emulator: KubeEmulator
) -> None:
    registry = CollectorRegistry()
    view = view_of(stack, registry, nodes)
    try:
        wait_for(view, lambda c: set(c.get(HEALTH, {})) == set(NODES), timeout=40.0)
        moved = kubeadm_node("worker-2", "10.0.0.2")
        kube_emulator.merge("nodes", "worker-2", {"status": moved["status"]}, status=True)
        columns = wait_for(view, lambda c: set(c.get(HEALTH, {})) == {"worker-1"}, timeout=20.0)
    finally:
        view.stop()
    assert columns[HEALTH] == {"worker-1": HEALTH_VALUES["worker-1"]}
    labels = {"reason": "unknown_address"}
    assert (registry.get_sample_value("tas_metric_series_dropped_total", labels) or 0) > 0


def test_tas_controller_labels_the_violating_node_from_kube_prometheus_stack_labels(
    stack: Stack, kube_emulator: KubeEmulator, tmp_path: Path
) -> None:
    for name, ip in NODES.items():
        kube_emulator.create("nodes", kubeadm_node(name, ip))
    kube_emulator.create("taspolicies", health_policy_document())  # deschedule: health == 2
    port = free_port()
    command = tas_command(
        "controller",
        "--kubeconfig",
        str(kube_emulator.write_kubeconfig(tmp_path / "kubeconfig")),
        "--metrics",
        f"prometheus:{stack.prometheus.url}",
        "--sync-period",
        "500ms",
        "--listen",
        f"127.0.0.1:{port}",
    )

    def label(node: str) -> str | None:
        found = kube_emulator.get("nodes", node)
        assert found is not None
        labels: dict[str, str] = found["metadata"].get("labels") or {}
        return labels.get("demo-policy")

    with Process(command, f"http://127.0.0.1:{port}", None, tmp_path / "controller.log") as process:
        process.start()
        process.eventually(lambda: label("worker-2") == "violating", "worker-2 labelled", 40)
        assert label("worker-1") is None
        assert process.terminate(timeout=20) == 0
