"""Per-pod usage from the resource metrics API (metrics-server's PodMetrics), through the real
Kubernetes adapter against the API emulator.

Covered:
- every PodMetrics becomes its pod's `cpu` (cores) and `memory` (bytes), its containers summed;
  what else a PodMetrics carries is left out;
- an API that cannot answer (no metrics-server: 503) is a `MetricFetchError`, logged once as it
  starts and once as it ends, not at every read.
"""

from __future__ import annotations

import logging

import pytest

from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.cluster.interface import ClusterError
from tas.metrics.errors import MetricFetchError
from tas.metrics.resource_metrics import ResourceMetricsPodUsage
from tests.k8s_emulator import KubeEmulator


def pod_metrics(name: str, *containers: tuple[str, str]) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "shop"},
        "timestamp": "2026-11-01T08:00:00Z",
        "window": "15s",
        "containers": [
            {"name": f"c{i}", "usage": {"cpu": cpu, "memory": memory, "ephemeral": "1"}}
            for i, (cpu, memory) in enumerate(containers)
        ],
    }


@pytest.fixture
def usage(kube_emulator: KubeEmulator) -> ResourceMetricsPodUsage:
    cluster = KubernetesCluster(kube_emulator.api_client(), watched=[])
    return ResourceMetricsPodUsage(cluster.list_pod_metrics, failure=ClusterError)


def test_each_pods_containers_are_summed_into_cores_and_bytes(
    kube_emulator: KubeEmulator, usage: ResourceMetricsPodUsage
) -> None:
    kube_emulator.create(
        "podmetrics", pod_metrics("web-1", ("250m", "64Mi"), ("1", "1Gi")), namespace="shop"
    )
    kube_emulator.create("podmetrics", pod_metrics("web-2", ("5000000n", "10Ki")), namespace="shop")
    assert usage.fetch() == {
        ("shop", "web-1"): {"cpu": 1.25, "memory": 64 * 2**20 + 2**30},
        ("shop", "web-2"): {"cpu": pytest.approx(0.005), "memory": 10 * 1024.0},
    }


def test_an_api_without_metrics_server_is_a_fetch_error_logged_once_until_it_is_back(
    kube_emulator: KubeEmulator,
    usage: ResourceMetricsPodUsage,
    caplog: pytest.LogCaptureFixture,
) -> None:
    kube_emulator.fail_next(r"^/apis/metrics\.k8s\.io/v1beta1/pods$", status=503, times=3)
    with caplog.at_level(logging.INFO, logger="tas.metrics.resource_metrics"):
        for _ in range(3):
            with pytest.raises(MetricFetchError, match=r"metrics\.k8s\.io pods"):
                usage.fetch()
        assert usage.fetch() == {}
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "is metrics-server running?" in messages[0]
    assert messages[1] == "Pod usage from the resource metrics API is back"
